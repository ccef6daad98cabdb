"""hfstatic: run HuggingFace decoder LLMs as fixed-shape programs.

    import hfstatic
    hfstatic.export("models/stories260K", "stories.hfs", prefill_chunk=32)
    runner = hfstatic.open("stories.hfs")            # picks the runner class by the program's io.contract
    print(runner.generate("Once upon a time", max_new_tokens=30))
    for piece in runner.stream(" The end.", max_new_tokens=20, temperature=0.8, seed=1):
        print(piece, end="", flush=True)

Errors are raised as hfstatic.Error (a RuntimeError) whose `.code` is the error code name. See
docs/python.md and the type stub (__init__.pyi) for the full API.
"""

from ._hfstatic import (Engine, Error, Program, Runner, Stream, Tokenizer, __version__, backends, export,
                        hub_download, json_object_gbnf, json_schema_gbnf)

__all__ = ["Engine", "Error", "Program", "Runner", "Stream", "Tokenizer", "backends", "export", "hub_download", "json_object_gbnf",
           "json_schema_gbnf", "open", "register_runner", "registered_runners", "__version__"]

# The io.contract metadata key (hfs::keys::kContract).
CONTRACT_KEY = "io.contract"

_runners = {}


def register_runner(contract, cls=None):
    """Registers `cls` as the runner class for programs whose `io.contract` is `contract`.

    `cls(program, **kwargs)` is called by hfstatic.open() with an hfstatic.Program. Re-registering a
    contract replaces the class. Usable as a decorator: `@hfstatic.register_runner("my_contract")`.
    Returns `cls`.
    """
    if not isinstance(contract, str) or not contract:
        raise Error(f"invalid_argument: register_runner: contract must be a non-empty str, got {contract!r}",
                    "invalid_argument")
    if cls is None:
        return lambda c: register_runner(contract, c)
    if not callable(cls):
        raise Error(f"invalid_argument: register_runner: the runner for '{contract}' must be callable, "
                    f"got {type(cls).__name__}", "invalid_argument")
    _runners[contract] = cls
    return cls


def registered_runners():
    """A copy of the contract name → runner class table."""
    return dict(_runners)


def open(path, **kwargs):  # noqa: A001 - hfstatic.open, like the C++ registry lookup
    """Loads the program at `path` (or takes an hfstatic.Program) and returns the runner registered for
    its `io.contract` metadata, constructed as `cls(program, **kwargs)`.

    No io.contract → Error "missing_metadata"; no runner registered for it → Error "unknown_contract".
    """
    program = path if isinstance(path, Program) else Program(path)
    contract = program.metadata.get(CONTRACT_KEY)
    if contract is None:
        raise Error(f"missing_metadata: {program.path}: no '{CONTRACT_KEY}' metadata: not a runnable program",
                    "missing_metadata")
    cls = _runners.get(contract)
    if cls is None:
        known = ", ".join(sorted(_runners)) or "none"
        raise Error(f"unknown_contract: {program.path}: {CONTRACT_KEY} is '{contract}', no runner is registered "
                    f"for it (registered: {known}; see hfstatic.register_runner)", "unknown_contract")
    return cls(program, **kwargs)


register_runner("hf_static", Runner)


def _messages_json(messages, what):
    import json
    if isinstance(messages, (str, bytes)) or not hasattr(messages, "__iter__"):
        raise Error(f"invalid_argument: {what}: messages must be a list of dicts with 'role' and 'content', "
                    f"got {type(messages).__name__}", "invalid_argument")
    messages = list(messages)
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise Error(f"invalid_argument: {what}: message {i} must be a dict with a str 'role', got {m!r}",
                        "invalid_argument")
    return json.dumps(messages)


def _apply_chat_template(self, messages, tools=None, add_generation_prompt=True, chat_template=None):
    """The prompt text for `messages` (dicts with role, content and any extra fields such as tool_calls),
    as the program's chat template renders it (HF's apply_chat_template(..., tokenize=False)).

    `tools`: a list of tool definitions (OpenAI's {"type": "function", "function": {...}}) passed to the
    template as `tools`. `chat_template`: None (the program's template; "plain" when it has none), "plain",
    "chatml", a name from the program's list of templates, or a file (docs/chat-templates.md) — the choice
    `hfstatic chat --chat-template` and `serve --chat-template` make the same way.
    """
    import json
    text, _ = self._chat_prompt(_messages_json(messages, "apply_chat_template"),
                                None if tools is None else json.dumps(list(tools)), add_generation_prompt,
                                chat_template)
    return text


def _chat(self, messages, tools=None, chat_template=None, **generate_kwargs):
    """The assistant's reply (str) to `messages`: the conversation rendered as apply_chat_template renders
    it (with the generation prompt), then generated from the start (`generate_kwargs` as generate() takes:
    max_new_tokens, temperature, stop, grammar, json_schema, ...). A program without a chat template uses
    the plain format: the messages' contents one per line, the model continuing the text.
    """
    import json
    if "continue_" in generate_kwargs or "add_special" in generate_kwargs:
        raise Error("invalid_argument: chat: each call renders the whole conversation (no continue_ or "
                    "add_special)", "invalid_argument")
    text, add_special = self._chat_prompt(_messages_json(messages, "chat"),
                                          None if tools is None else json.dumps(list(tools)), True, chat_template)
    return self.generate(text, add_special=add_special, **generate_kwargs)


Runner.apply_chat_template = _apply_chat_template
Runner.chat = _chat
