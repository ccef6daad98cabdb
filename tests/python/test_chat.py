"""Runner.chat and Runner.apply_chat_template: the chat format chat and serve use (ChatFormat::select).

Expected renderings are written out by hand from the templates; replies are checked against the greedy
reference of tests/test_generate.py (the plain format of a program without a template is its text prompt).
Cost: one small export and a few 30-token generations, ~2 s.
"""
import json
import shutil

import pytest

import hfstatic
from test_generate import N, PROMPT, greedy_ref, runner_tokenizer_ids  # noqa: F401 (fixtures)

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
# (HF's trim_blocks drops the newline right after a block tag: none after endfor.)
TEMPLATE = ("{% if tools %}{% for t in tools %}<{{ t.function.name }}>{% endfor %}\n{% endif %}"
            "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
            "{% if add_generation_prompt %}[assistant]{% endif %}")


@pytest.fixture(scope="module")
def templated(stories_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("templated")
    for f in stories_dir.iterdir():
        if f.is_file():
            shutil.copy(f, d / f.name)
    cfg = json.loads((stories_dir / "tokenizer_config.json").read_text())
    cfg["chat_template"] = TEMPLATE
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    return hfstatic.Runner(hfstatic.export(d, d / "t.hfs", prefill_chunk=8, context=96))


def test_program_without_a_template_uses_the_plain_format(runner, greedy_ref):  # noqa: F811
    messages = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": PROMPT}]
    assert runner.apply_chat_template(messages) == "Be kind.\n" + PROMPT
    # The reply to one message is the model's continuation of it, as generate() gives from the text.
    _, _, _, expected = greedy_ref
    reply = runner.chat([{"role": "user", "content": PROMPT}], max_new_tokens=N, temperature=0)
    assert reply == expected
    # Generation keywords pass through (stop strings here); each call starts from the conversation.
    for _ in range(3):
        assert runner.chat([{"role": "user", "content": PROMPT}], max_new_tokens=N, temperature=0,
                           stop="Lily") == expected[: expected.index("Lily")]


def test_the_programs_template_with_tools(templated):
    messages = [{"role": "user", "content": "hi"}]
    assert templated.apply_chat_template(messages) == "[user] hi\n[assistant]"
    assert templated.apply_chat_template(messages, add_generation_prompt=False) == "[user] hi\n"
    assert templated.apply_chat_template(messages, tools=TOOLS) == "<get_weather><add>[user] hi\n[assistant]"
    tool_turn = messages + [{"role": "assistant", "content": "",
                             "tool_calls": [{"function": {"name": "add", "arguments": {"a": 1}}}]},
                            {"role": "tool", "content": "2"}]
    assert templated.apply_chat_template(tool_turn).endswith("[assistant] \n[tool] 2\n[assistant]")
    reply = templated.chat(messages, tools=TOOLS, max_new_tokens=5, temperature=0)
    assert isinstance(reply, str)


def test_chosen_formats(templated, tmp_path):
    messages = [{"role": "user", "content": "hi"}]
    assert templated.apply_chat_template(messages, chat_template="plain") == "hi"
    assert templated.apply_chat_template(messages, chat_template="chatml") == \
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    f = tmp_path / "t.jinja"
    f.write_text("{% for m in messages %}{{ m.content | upper }}{% endfor %}")
    assert templated.apply_chat_template(messages, chat_template=str(f)) == "HI"
    with pytest.raises(hfstatic.Error) as e:
        templated.apply_chat_template(messages, chat_template="nonesuch")
    assert e.value.code == "not_found" and "plain, chatml" in str(e.value)


def test_bad_messages(runner):
    for bad in ["hi", [{"content": "no role"}], [1]]:
        with pytest.raises(hfstatic.Error) as e:
            runner.apply_chat_template(bad)
        assert e.value.code == "invalid_argument"
    with pytest.raises(hfstatic.Error) as e:
        runner.chat([{"role": "user", "content": "x"}], continue_=True, temperature=0)
    assert e.value.code == "invalid_argument"
