"""safetensors_np: format layout, dtype round trips, bf16 rounding, sharded dirs and malformed files."""

import json
import os
import struct

import numpy as np
import pytest

import safetensors_np as st


def test_layout_is_header_length_json_then_aligned_data(tmp_path):
    path = str(tmp_path / "a.safetensors")
    st.write_file(path, {"a": np.arange(3, dtype=np.float32), "b": np.ones((2, 2), np.float16)},
                  metadata={"format": "pt"})
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"format": "pt"}
    assert header["a"] == {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}
    assert header["b"] == {"dtype": "F16", "shape": [2, 2], "data_offsets": [12, 20]}
    assert raw[8 + n:8 + n + 12] == np.arange(3, dtype="<f4").tobytes()
    assert len(raw) == 8 + n + 20


@pytest.mark.parametrize("tag", ["F32", "F16", "BF16"])
def test_round_trip(tmp_path, tag):
    x = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    path = str(tmp_path / "x.safetensors")
    st.write_file(path, {"x": x}, dtypes={"x": tag})
    got = st.read_file(path)["x"]
    assert st.dtypes_of_file(path) == {"x": tag}
    if tag == "F32":
        np.testing.assert_array_equal(got, x)
    elif tag == "F16":
        np.testing.assert_array_equal(got, x.astype(np.float16))
    else:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, x, rtol=2 ** -8)
        bits = st.read_file(path, widen_bf16=False)["x"]
        assert bits.dtype == np.uint16
        import torch  # independent rounding: torch's float32 -> bfloat16 cast (round to nearest even)
        want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(bits, want)


def test_bf16_rounds_to_nearest_even():
    one_ulp = 2.0 ** -7  # bf16 spacing just above 1.0
    values = np.array([1.0, 1.0 + one_ulp / 2, 1.0 + 3 * one_ulp / 2, 1.0 + one_ulp * 0.51, -2.0,
                       np.inf, -np.inf, np.finfo(np.float32).max, 3.3895314e38], dtype=np.float32)
    bits = st.f32_to_bf16_bits(values)
    assert [hex(b) for b in bits] == ["0x3f80", "0x3f80", "0x3f82", "0x3f81", "0xc000", "0x7f80", "0xff80",
                                      "0x7f80", "0x7f7f"]  # f32 max overflows to inf; bf16 max stays
    nan = st.f32_to_bf16_bits(np.array([np.nan], np.float32))
    assert np.isnan(st.bf16_bits_to_f32(nan))[0]


def test_sharded_dir_loads_through_index(tmp_path):
    st.write_file(str(tmp_path / "s1.safetensors"), {"a": np.ones(2, np.float32)})
    st.write_file(str(tmp_path / "s2.safetensors"), {"b": np.zeros(3, np.float32)})
    st.write_index(str(tmp_path), {"a": "s1.safetensors", "b": "s2.safetensors"}, 20)
    got = st.load_model_dir(str(tmp_path))
    assert sorted(got) == ["a", "b"] and got["b"].shape == (3,)


def test_index_pointing_at_wrong_shard_is_rejected(tmp_path):
    st.write_file(str(tmp_path / "s1.safetensors"), {"a": np.ones(2, np.float32)})
    st.write_index(str(tmp_path), {"a": "s2.safetensors"}, 8)
    with pytest.raises(st.SafetensorsError, match="s2.safetensors"):
        st.load_model_dir(str(tmp_path))


def test_model_dir_without_weights_is_rejected(tmp_path):
    with pytest.raises(st.SafetensorsError, match="neither"):
        st.load_model_dir(str(tmp_path))


def _write_raw(path, header, data=b""):
    blob = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob + data)


@pytest.mark.parametrize("header,data,message", [
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4, "needs 8 bytes"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "outside data"),
    ({"a": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}}, b"\0", "unsupported dtype"),
    ({"a": {"dtype": "F32", "shape": [2]}}, b"", "lacks 'data_offsets'"),
])
def test_malformed_headers_are_rejected(tmp_path, header, data, message):
    path = str(tmp_path / "bad.safetensors")
    _write_raw(path, header, data)
    with pytest.raises(st.SafetensorsError, match=message):
        st.read_file(path)


def test_truncated_file_is_rejected(tmp_path):
    path = str(tmp_path / "t.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(st.SafetensorsError, match="exceeds file size"):
        st.read_file(path)


def test_writer_enforces_order_shape_and_count(tmp_path):
    path = str(tmp_path / "w.safetensors")
    with pytest.raises(st.SafetensorsError, match="expected tensor 'a' next"):
        with st.Writer(path, [("a", "F32", (2,)), ("b", "F32", (2,))]) as w:
            w.write("b", np.zeros(2, np.float32))
    assert not os.path.exists(path)
    with pytest.raises(st.SafetensorsError, match="expected shape"):
        with st.Writer(path, [("a", "F32", (2,))]) as w:
            w.write("a", np.zeros(3, np.float32))
    w = st.Writer(path, [("a", "F32", (2,)), ("b", "F32", (2,))])
    w.write("a", np.zeros(2, np.float32))
    with pytest.raises(st.SafetensorsError, match="closed after 1 of 2"):
        w.close()
    assert not os.path.exists(path)
