"""Read and write safetensors files with numpy only (no `safetensors` package needed).

Format (https://github.com/huggingface/safetensors): 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
  {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
then the raw little-endian tensor bytes; offsets are relative to the end of the header. Writers pad the
header with spaces to a multiple of 8 so the data starts aligned (as the reference writer does).

BF16 has no numpy dtype: reading widens it to float32 (exact: a bf16 is the top 16 bits of an f32);
writing takes float32 values and rounds them to bf16 (round-to-nearest-even, NaN stays NaN).

Sharded checkpoints: model.safetensors.index.json = {"metadata": {"total_size": bytes}, "weight_map":
{"<name>": "model-00001-of-00002.safetensors", ...}}.

Usage:
  import safetensors_np as st
  tensors = st.load_model_dir("/path/to/model")       # {name: np.ndarray}, index or single file
  st.write_file("x.safetensors", {"w": np.zeros((2, 3), np.float32)}, dtypes={"w": "BF16"})
  with st.Writer("big.safetensors", [("w", "F16", (4096, 4096))]) as w:   # streaming, one tensor at a time
      w.write("w", array)
"""

import json
import mmap
import os
import struct

import numpy as np

# safetensors dtype tag -> numpy storage dtype (BF16 is stored as raw uint16 bits).
_NP_OF = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_TAG_OF_NP = {
    np.dtype("float64"): "F64",
    np.dtype("float32"): "F32",
    np.dtype("float16"): "F16",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("int16"): "I16",
    np.dtype("int8"): "I8",
    np.dtype("uint64"): "U64",
    np.dtype("uint32"): "U32",
    np.dtype("uint16"): "U16",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"


class SafetensorsError(ValueError):
    pass


def bf16_bits_to_f32(bits):
    """uint16 bf16 bit patterns -> float32 values (exact)."""
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """float32 values -> uint16 bf16 bit patterns, round-to-nearest-even; NaN -> quiet NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)  # keep sign, force a quiet-NaN mantissa bit
    return out


def _to_storage(array, tag):
    """Converts a numpy array into the exact bytes layout of safetensors dtype `tag`."""
    if tag == "BF16":
        if array.dtype == np.uint16:
            raise SafetensorsError("BF16 write expects float values, got uint16 (ambiguous: bits or numbers?)")
        return f32_to_bf16_bits(array.astype(np.float32, copy=False))
    if tag not in _NP_OF:
        raise SafetensorsError(f"unsupported safetensors dtype {tag!r}; expected one of {sorted(_NP_OF)}")
    return np.ascontiguousarray(array, dtype=_NP_OF[tag])


def read_header(path):
    """Returns (header dict without __metadata__, metadata dict, data start offset)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise SafetensorsError(f"{path}: file is {size} bytes, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", raw)
        if n > size - 8:
            raise SafetensorsError(f"{path}: header length {n} exceeds file size {size} - 8")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise SafetensorsError(f"{path}: header is not valid UTF-8 JSON: {e}") from e
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header must be a JSON object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", {}) or {}
    data_len = size - 8 - n
    for name, info in header.items():
        for key in ("dtype", "shape", "data_offsets"):
            if key not in info:
                raise SafetensorsError(f"{path}: tensor {name!r} lacks {key!r}")
        tag = info["dtype"]
        if tag not in _NP_OF:
            raise SafetensorsError(f"{path}: tensor {name!r} has unsupported dtype {tag!r}")
        begin, end = info["data_offsets"]
        want = int(np.prod(info["shape"], dtype=np.int64)) * _NP_OF[tag].itemsize
        if end - begin != want:
            raise SafetensorsError(
                f"{path}: tensor {name!r} {tag}{list(info['shape'])} needs {want} bytes, offsets give {end - begin}")
        if not (0 <= begin <= end <= data_len):
            raise SafetensorsError(f"{path}: tensor {name!r} offsets [{begin}, {end}] outside data of {data_len} bytes")
    return header, metadata, 8 + n


def read_file(path, names=None, widen_bf16=True):
    """Reads tensors (all, or those in `names`) as numpy arrays backed by a read-only memory map.

    BF16 tensors are widened to float32 when widen_bf16 (default), else returned as raw uint16 bits."""
    header, _, start = read_header(path)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.path.getsize(path) > 0 else b""
    out = {}
    for name, info in header.items():
        if names is not None and name not in names:
            continue
        begin, end = info["data_offsets"]
        tag = info["dtype"]
        arr = np.frombuffer(mm, dtype=_NP_OF[tag], count=(end - begin) // _NP_OF[tag].itemsize,
                            offset=start + begin).reshape(info["shape"])
        if tag == "BF16" and widen_bf16:
            arr = bf16_bits_to_f32(arr)
        out[name] = arr
    return out


def dtypes_of_file(path):
    header, _, _ = read_header(path)
    return {name: info["dtype"] for name, info in header.items()}


class Writer:
    """Streams tensors into one safetensors file; the full list of (name, dtype tag, shape) is fixed up
    front so the header can be written first and each tensor can then be produced and dropped in turn."""

    def __init__(self, path, specs, metadata=None):
        self.path = path
        self._order = []
        self._info = {}
        header = {}
        if metadata:
            header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
        offset = 0
        for name, tag, shape in specs:
            if tag not in _NP_OF:
                raise SafetensorsError(f"{path}: tensor {name!r}: unsupported dtype {tag!r}")
            if name in self._info:
                raise SafetensorsError(f"{path}: tensor {name!r} listed twice")
            nbytes = int(np.prod(shape, dtype=np.int64)) * _NP_OF[tag].itemsize
            header[name] = {"dtype": tag, "shape": [int(s) for s in shape], "data_offsets": [offset, offset + nbytes]}
            self._info[name] = (tag, tuple(int(s) for s in shape))
            self._order.append(name)
            offset += nbytes
        self.data_size = offset
        blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
        blob += b" " * ((-len(blob)) % 8)
        # Written under a temporary name and renamed on close: readers holding a memory map of an older file
        # at `path` keep their (unlinked) inode instead of faulting on a truncated one.
        self._tmp = path + ".partial"
        self._f = open(self._tmp, "wb")
        self._f.write(struct.pack("<Q", len(blob)))
        self._f.write(blob)
        self._next = 0

    def write(self, name, array):
        """Writes the next tensor; tensors must come in spec order. `array` may be written in row
        chunks by calling write_rows instead."""
        self._expect(name)
        tag, shape = self._info[name]
        array = np.asarray(array)
        if tuple(array.shape) != shape:
            raise SafetensorsError(
                f"{self.path}: tensor {name!r}: expected shape {list(shape)}, got {list(array.shape)}")
        self._f.write(_to_storage(array, tag).tobytes())
        self._next += 1

    def write_rows(self, name, chunks):
        """Writes the next tensor from an iterable of row blocks (each [rows, *shape[1:]])."""
        self._expect(name)
        tag, shape = self._info[name]
        rows = 0
        for chunk in chunks:
            chunk = np.asarray(chunk)
            if tuple(chunk.shape[1:]) != shape[1:]:
                raise SafetensorsError(f"{self.path}: tensor {name!r}: row block shape {list(chunk.shape)} "
                                       f"does not fit {list(shape)}")
            self._f.write(_to_storage(chunk, tag).tobytes())
            rows += chunk.shape[0]
        if rows != shape[0]:
            raise SafetensorsError(f"{self.path}: tensor {name!r}: wrote {rows} rows, expected {shape[0]}")
        self._next += 1

    def _expect(self, name):
        if self._next >= len(self._order) or self._order[self._next] != name:
            want = self._order[self._next] if self._next < len(self._order) else "<none>"
            raise SafetensorsError(f"{self.path}: expected tensor {want!r} next, got {name!r}")

    def close(self):
        if self._f is None:
            return
        self._f.close()
        self._f = None
        if self._next != len(self._order):
            os.remove(self._tmp)
            raise SafetensorsError(f"{self.path}: closed after {self._next} of {len(self._order)} tensors")
        os.replace(self._tmp, self.path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif self._f is not None:
            self._f.close()
            self._f = None
            os.remove(self._tmp)


def write_file(path, tensors, dtypes=None, metadata=None):
    """Writes {name: array} to one file. dtypes: optional {name: tag} (e.g. "BF16"); default from the array."""
    dtypes = dtypes or {}
    specs = []
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        tag = dtypes.get(name) or _TAG_OF_NP.get(arr.dtype)
        if tag is None:
            raise SafetensorsError(f"{path}: tensor {name!r}: no safetensors dtype for numpy {arr.dtype}")
        specs.append((name, tag, arr.shape))
    with Writer(path, specs, metadata) as w:
        for name, arr in tensors.items():
            w.write(name, arr)


def write_index(model_dir, weight_map, total_size):
    with open(os.path.join(model_dir, INDEX_NAME), "w") as f:
        json.dump({"metadata": {"total_size": int(total_size)}, "weight_map": dict(sorted(weight_map.items()))},
                  f, indent=2)
        f.write("\n")


def model_files(model_dir):
    """Returns the list of safetensors files of a model dir (the index's shards, or model.safetensors)."""
    index = os.path.join(model_dir, INDEX_NAME)
    if os.path.exists(index):
        with open(index) as f:
            try:
                weight_map = json.load(f)["weight_map"]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise SafetensorsError(f"{index}: expected JSON with a 'weight_map' object: {e}") from e
        return sorted(set(weight_map.values())), weight_map
    single = os.path.join(model_dir, SINGLE_NAME)
    if os.path.exists(single):
        return [SINGLE_NAME], None
    raise SafetensorsError(f"{model_dir}: neither {INDEX_NAME} nor {SINGLE_NAME} exists")


def load_model_dir(model_dir, widen_bf16=True):
    """Loads every tensor of a HF model dir into {name: np.ndarray}; checks the index against the shards."""
    files, weight_map = model_files(model_dir)
    out = {}
    for fname in files:
        path = os.path.join(model_dir, fname)
        if not os.path.exists(path):
            raise SafetensorsError(f"{model_dir}: index names shard {fname!r}, which does not exist")
        for name, arr in read_file(path, widen_bf16=widen_bf16).items():
            if name in out:
                raise SafetensorsError(f"{model_dir}: tensor {name!r} appears in more than one shard")
            if weight_map is not None and weight_map.get(name) != fname:
                raise SafetensorsError(
                    f"{model_dir}: tensor {name!r} found in {fname!r}, index says {weight_map.get(name)!r}")
            out[name] = arr
    if weight_map is not None:
        missing = sorted(set(weight_map) - set(out))
        if missing:
            raise SafetensorsError(f"{model_dir}: index lists tensors missing from the shards: {missing[:5]}")
    return out


def storage_dtypes(model_dir):
    """{name: safetensors dtype tag} over all files of a model dir."""
    files, _ = model_files(model_dir)
    out = {}
    for fname in files:
        out.update(dtypes_of_file(os.path.join(model_dir, fname)))
    return out
