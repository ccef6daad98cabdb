"""Type stub for hfstatic (the pybind11 module `hfstatic._hfstatic` plus the pure-Python registry)."""

import os
from typing import Any, Callable, Iterator, Literal, Protocol, Sequence, TypeVar, overload

import numpy as np
import numpy.typing as npt

__version__: str
CONTRACT_KEY: str  # "io.contract"

_PathLike = str | bytes | os.PathLike[str] | os.PathLike[bytes]
_Stop = str | int | Sequence[str | int] | None
_T = TypeVar("_T")

class _IoAllocator(Protocol):
    def allocate(self, nbytes: int) -> Any: ...  # a writable buffer (numpy array, bytearray, mmap, ...)

class Error(RuntimeError):
    """Every hfstatic failure. str(e) == "<code>: <message>"."""

    code: str  # stable lower-case error code name: "io", "capacity_exceeded", "unknown_contract", ...
    def __init__(self, message: str, code: str = "internal") -> None: ...

class Program:
    """A loaded, verified program file (.hfs). Immutable; shareable between runners."""

    def __init__(self, path: _PathLike) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def format_version(self) -> int: ...
    @property
    def file_size(self) -> int: ...
    @property
    def metadata(self) -> dict[str, Any]:
        """A new dict of the metadata (JSON-like values), e.g. metadata["io.contract"] == "hf_static"."""
    @property
    def methods(self) -> list[str]: ...
    @property
    def constants(self) -> list[str]: ...

class Tokenizer:
    """A HuggingFace tokenizer.json tokenizer. Immutable and thread-safe; encode/decode release the GIL."""

    @staticmethod
    def from_dir(path: _PathLike) -> Tokenizer:
        """Reads <path>/tokenizer.json and, when present, <path>/tokenizer_config.json."""
    @staticmethod
    def from_program(program: Program | _PathLike) -> Tokenizer:
        """The tokenizer a program embeds (constants "file:tokenizer.json" / "file:tokenizer_config.json")."""
    def encode(self, text: str, add_special: bool = True) -> list[int]:
        """Text → ids; `add_special` adds what the post-processor adds (BOS for Llama), as HF's encode does."""
    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str: ...
    @property
    def bos_id(self) -> int | None: ...
    @property
    def eos_ids(self) -> list[int]: ...
    @property
    def vocab_size(self) -> int: ...
    def token_to_id(self, token: str) -> int | None: ...
    def id_to_token(self, id: int) -> str | None: ...
    def is_special(self, id: int) -> bool: ...

class Stream:
    """One generation, step by step (Runner.stream()). Yields str pieces for a str prompt, int ids for a
    token prompt. Each step releases the GIL. Any other state-changing call on the runner ends the stream:
    its next step raises Error("invalid_argument")."""

    def __iter__(self) -> Stream: ...
    def __next__(self) -> Any: ...  # str (text prompt) or int (token prompt)
    @property
    def tokens(self) -> list[int]:
        """Ids generated so far (the token that ended generation included)."""
    @property
    def stop_reason(self) -> Literal["max_tokens", "stop_token", "stop_string", "context_full", "cancelled"] | None:
        """None while running."""

class Runner:
    """Runs a program of the hf_static contract (hfs::Runner).

    The runner's sequence is everything prefilled plus everything generated. The last generated token is
    held as `pending_token` and committed at the start of the next prefill/decode_step/generate/stream, so
    consecutive generate() calls continue the text; `position` counts fed tokens only.
    Calls that compute release the GIL; a runner serves one thread at a time (calls from other threads wait).
    """

    def __init__(
        self,
        program: Program | _PathLike,
        backends: Sequence[str] | None = None,  # priority order, e.g. ["cpu_fast"]; "cpu_ref" takes the rest
        tail: Literal["auto", "pad", "decode"] = "auto",  # routing of a prompt's last partial chunk
        shared_memory_io: bool = False,
        # where every I/O buffer lives: None/"backend", "heap", "shared_memory", or an object whose
        # allocate(nbytes) returns a writable C-contiguous buffer (≥ nbytes, 64-byte aligned)
        io_allocator: Literal["backend", "heap", "shared_memory"] | _IoAllocator | None = None,
        device: int | None = None,  # the vulkan backend's device (backends must list "vulkan")
        # False: faster f32/f16/bf16 prefill on cpu_fast; prompt rows then round unlike decode rows
        deterministic: bool = True,
    ) -> None: ...
    def prefill(self, tokens: Sequence[int]) -> None:
        """Feeds tokens (any count that fits). Over capacity → Error("capacity_exceeded"), state unchanged."""
    def decode_step(self, token: int) -> npt.NDArray[np.float32]:
        """Feeds one token and returns the logits after it: a read-only float32 [vocab] VIEW of the runner's
        output buffer (no copy). It stays readable (it keeps the runner alive) but its contents are
        overwritten by the next decode step — np.copy() it to keep the values."""
    @property
    def logits(self) -> npt.NDArray[np.float32]:
        """The logits after the last fed token: a read-only view like decode_step()'s; shape (0,) when none."""
    @overload
    def generate(
        self,
        prompt: str,
        max_new_tokens: int = 128,
        temperature: float = 0.8,  # 0 = greedy; 0.8 is every front end's default (llama.cpp's)
        top_k: int = 0,  # 0 = off
        top_p: float = 1.0,  # 1 = off
        min_p: float = 0.0,  # 0 = off
        repetition_penalty: float = 1.0,  # 1 = off
        seed: int = 0,  # same seed, same text
        stop: _Stop = None,  # str: stop strings (text is cut before them); int: extra stop token ids
        ignore_eos: bool = False,
        add_special: bool | None = None,  # None: add BOS etc. only when the sequence is empty
        # speculative decoding; same output as without. Any other string: the path of a draft program
        # (a smaller .hfs with the same tokenizer)
        draft: Literal["none", "ngram"] | str | None = None,
        draft_max: int = 8,  # most drafts per verification step (also capped by the program's step methods)
        # structured output, at most one (docs/structured-output.md): a GBNF grammar's text, a JSON Schema
        # (dict or JSON text), a regular expression the whole output matches, or any JSON object; drafts are
        # off under a constraint
        grammar: str | None = None,
        json_schema: dict[str, Any] | str | None = None,
        regex: str | None = None,
        json_object: bool = False,
        logit_bias: dict[int, float] | None = None,  # added to those tokens' logits (OpenAI's logit_bias)
        continue_: bool = False,  # continue the runner's sequence instead of starting from the prompt
    ) -> str:
        """Encodes `prompt` with the program's tokenizer and returns the generated text (the token that
        ended generation — EOS or a stop id — is not rendered; text is cut before a stop string)."""
    @overload
    def generate(
        self,
        prompt: Sequence[int],
        max_new_tokens: int = 128,
        temperature: float = 0.8,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
        seed: int = 0,
        stop: int | Sequence[int] | None = None,
        ignore_eos: bool = False,
        add_special: bool | None = None,
        draft: Literal["none", "ngram"] | str | None = None,
        draft_max: int = 8,
        grammar: str | None = None,
        json_schema: dict[str, Any] | str | None = None,
        regex: str | None = None,
        json_object: bool = False,
        logit_bias: dict[int, float] | None = None,  # added to those tokens' logits (OpenAI's logit_bias)
        continue_: bool = False,
    ) -> list[int]:
        """Token prompt → generated ids (the stop token included when one ended generation)."""
    def stream(
        self,
        prompt: str | Sequence[int],
        max_new_tokens: int = 128,
        temperature: float = 0.8,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
        seed: int = 0,
        stop: _Stop = None,
        ignore_eos: bool = False,
        add_special: bool | None = None,
        draft: Literal["none", "ngram"] | str | None = None,
        draft_max: int = 8,
        grammar: str | None = None,
        json_schema: dict[str, Any] | str | None = None,
        regex: str | None = None,
        json_object: bool = False,
        logit_bias: dict[int, float] | None = None,  # added to those tokens' logits (OpenAI's logit_bias)
        continue_: bool = False,
    ) -> Stream:
        """Like generate() but stepwise; the prompt is prefilled now (errors raise here). The pieces of a
        str prompt's stream concatenate to what generate() returns."""
    def apply_chat_template(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        # None: the program's template ("plain" when it has none); "plain", "chatml", a list-form name, a file
        chat_template: str | None = None,
    ) -> str:
        """The prompt text the chat format renders for `messages` (HF's apply_chat_template(tokenize=False))."""
    def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        chat_template: str | None = None,
        **generate_kwargs: Any,
    ) -> str:
        """The reply to the conversation, generated from its rendering (generate()'s keywords, no continue_)."""
    def reset(self) -> None:
        """Forgets the sequence: position 0, caches cleared (the next run equals a fresh load)."""
    def save(self, path: _PathLike) -> None:
        """Saves the fed tokens and their cache rows to a session file (docs/sessions.md), written to a
        temporary and renamed; the pending token is not part of it."""
    def restore(self, path: _PathLike) -> None:
        """Replaces the sequence with a session file's tokens and cache rows; no pending token, and the next
        fed token's logits equal those of recomputing. Raises hfstatic.Error (the runner unchanged) for another
        program's file, another format version, a truncated or corrupted file, or one over the context."""
    @property
    def tokens(self) -> list[int]: ...
    def can_accept(self, n: int) -> bool: ...
    @property
    def position(self) -> int: ...
    @property
    def capacity_left(self) -> int: ...
    @property
    def pending_token(self) -> int | None: ...
    @property
    def stats(self) -> dict[str, float | int]:
        """load_ms, prompt_tokens, prefill_ms, generated_tokens, decode_steps, decode_ms, ttft_ms,
        peak_rss_bytes, prefill_tok_s, decode_tok_s."""
    @property
    def info(self) -> dict[str, Any]:
        """contract, contract_version, prefill_tokens, prefill_step_sizes (every prefill method's tokens per
        call, ascending), context_length, vocab_size, bos_token_id, eos_token_ids, logits_all."""
    @property
    def program(self) -> Program: ...
    @property
    def tokenizer(self) -> Tokenizer:
        """The program's embedded tokenizer; Error("not_found") when it was exported without one."""

class Engine:
    """Many sequences sharing one program's weight passes (hfs::Engine); see docs/python.md."""
    def __init__(self, program: _PathLike | Program, backends: list[str] | None = None) -> None: ...
    # Generation keywords: max_new_tokens=128 (0: only feed), temperature, top_k, top_p, min_p,
    # repetition_penalty, logit_bias ({id: bias}), seed, stop (int token ids), ignore_eos, draft (None | "none" | "ngram" | the path of
    # a draft program), draft_max, and one of grammar / json_schema / regex / json_object (as generate()).
    def add(self, prompt: str | Sequence[int], **generation: Any) -> int:
        """A str prompt is encoded (BOS added); sequence()["text"] is its text, and stop may hold stop strings."""
    def fork(self, parent: int, prefix: int, more: Sequence[int], **generation: Any) -> int: ...
    def append(self, sequence: int, tokens: Sequence[int], **generation: Any) -> None: ...
    def remove(self, sequence: int) -> None: ...
    def save(self, sequence: int, path: _PathLike) -> None: ...
    def restore(self, path: _PathLike) -> int: ...
    @property
    def idle(self) -> bool: ...
    def step(self) -> list[tuple[int, int, bool]]:
        """(sequence, token, finished) per token generated; token -1: ended without one."""
    def logits(self, sequence: int) -> npt.NDArray[np.float32] | None: ...
    def sequence(self, sequence: int) -> dict[str, Any]: ...
    def sequences(self) -> list[int]: ...
    @property
    def stats(self) -> dict[str, float]: ...
    @property
    def max_sequences(self) -> int: ...
    @property
    def step_sizes(self) -> list[int]: ...

def json_schema_gbnf(schema: dict[str, Any] | str) -> str:
    """A JSON Schema as the GBNF grammar generate(json_schema=...) compiles (llama.cpp's syntax)."""
def backends() -> list[str]:
    """The backends built into this library, by name (e.g. ["cpu_fast", "cpu_ref", "vulkan"])."""
def json_object_gbnf() -> str:
    """The GBNF grammar generate(json_object=True) compiles."""

def export(
    model_dir: _PathLike,
    out: _PathLike,
    prefill_chunk: int | None = None,  # None: 128, at most the context
    context: int | None = None,  # None: min(max_position_embeddings, 4096)
    cache_dtype: Literal["f32", "f16"] | None = None,  # None: f32
    weights: Literal["keep", "f32", "f16", "bf16", "int8", "int4"] | None = None,  # None: keep the checkpoint's dtype
    logits_all: bool = False,
    prefill_variants: list[int] | None = None,  # smaller prefill methods (each < prefill_chunk); None: C/16, C/4, C/2
    sequences: int = 1,  # sequences an Engine serves at once (> 1: contract version 2)
    step_sizes: list[int] | None = None,  # step_<T> methods (every row's logits); None: 2,4,8,16 with sequences > 1
    pool_slots: int = 0,  # global cache slots the sequences share; 0: sequences x context
) -> str:
    """Exports a HuggingFace checkpoint directory to a program file and returns `out` as a str."""

def hub_download(
    name: str,  # "ORG/NAME[@REVISION]"
    revision: str | None = None,  # overrides the name's @REVISION
    cache_dir: str | None = None,  # None: $HF_HUB_CACHE, else $HF_HOME/hub
    token: str | None = None,  # None: $HF_TOKEN, else $HF_HOME/token
    offline: bool = False,  # True (or HF_HUB_OFFLINE=1): from the cache only
) -> str:
    """Downloads (or finds in huggingface_hub's cache) a checkpoint by Hub name; returns its snapshot directory.
    Errors: "not_found", "permission_denied", "network", "checksum_mismatch" (docs/hub.md)."""

def register_runner(contract: str, cls: Callable[..., Any] | None = None) -> Any:
    """Registers cls(program: Program, **kwargs) as the runner for programs whose io.contract is `contract`
    (replacing any earlier one); without `cls`, returns a decorator. Default: "hf_static" → Runner."""

def registered_runners() -> dict[str, Callable[..., Any]]: ...
def open(path: Program | _PathLike, **kwargs: Any) -> Any:
    """The runner registered for the program's io.contract, as cls(Program(path), **kwargs).
    Errors: "missing_metadata" (no io.contract), "unknown_contract" (none registered), "io", ..."""
