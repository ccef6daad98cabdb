// Jinja-subset semantics, errors and limits. Expected strings are worked out by hand from Jinja2 /
// Python semantics (and checked against Python where numeric formatting is involved).
#include <gtest/gtest.h>

#include <string>

#include "hfstatic/chat_template.h"

namespace {

using hfs::ChatContext;
using hfs::ChatTemplate;
using hfs::ErrorCode;
using hfs::Value;

hfs::Result<std::string> render(const std::string& src, Value::Object vars = {}, hfs::RenderLimits limits = {},
                                int64_t now = -1) {
  HFS_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::parse(src));
  return t.render_variables(vars, limits, now);
}

std::string ok(const std::string& src, Value::Object vars = {}) {
  auto r = render(src, std::move(vars));
  EXPECT_TRUE(r.ok()) << src << "\n" << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? r.value() : "<error>";
}

hfs::Error err(const std::string& src, Value::Object vars = {}, hfs::RenderLimits limits = {}) {
  auto r = render(src, std::move(vars), limits);
  EXPECT_FALSE(r.ok()) << src << " rendered " << (r.ok() ? r.value() : "");
  return r.ok() ? hfs::Error(ErrorCode::kOk, "") : r.error();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ChatTemplate, WhitespaceControlTrimAndLstripBlocks) {
  EXPECT_EQ(ok("  {% if true %}\nA\n  {% endif %}\nB"), "A\nB");
  EXPECT_EQ(ok("a  {{- 'b' -}}  \n c"), "abc");
  EXPECT_EQ(ok("a {%- if true -%} b {%- endif -%} c"), "abc");
  EXPECT_EQ(ok("a{# hi #}b"), "ab");
  EXPECT_EQ(ok("a {#- hi -#} b"), "ab");
  EXPECT_EQ(ok("x\n"), "x");          // one trailing newline dropped
  EXPECT_EQ(ok("x\n\n"), "x\n");
  EXPECT_EQ(ok("{{ 'a' }}\nb"), "a\nb");  // trim_blocks does not apply to expressions
}

TEST(ChatTemplate, ForLoops) {
  EXPECT_EQ(ok("{% for x in [1,2,3] %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}"
               "{{ loop.length }}|{% endfor %}"),
            "01TrueFalse3|12FalseFalse3|23FalseTrue3|");
  EXPECT_EQ(ok("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(ok("{% for x in range(6) if x % 2 == 0 %}{{ x }}{{ ',' if not loop.last }}{% endfor %}"), "0,2,4");
  EXPECT_EQ(ok("{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "b=1;a=2;");
  EXPECT_EQ(ok("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
               "{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(ok("{% for x in 'héllo' %}{{ x }}.{% endfor %}"), "h.é.l.l.o.");
  EXPECT_EQ(ok("{% for x in [1,2,3] %}{{ loop.revindex }}{{ loop.previtem }}{{ loop.cycle('a','b') }} {% endfor %}"),
            "3a 21b 12a ");
  EXPECT_EQ(ok("{% for x in undefined_thing %}x{% endfor %}done"), "done");
}

TEST(ChatTemplate, ScopingAndNamespace) {
  EXPECT_EQ(ok("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"), "21");
  EXPECT_EQ(ok("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}"), "2");
  EXPECT_EQ(ok("{% set ns = namespace(x=1) %}{% for i in [1,2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"), "4");
  EXPECT_EQ(ok("{% set ns = namespace() %}{% set ns.a = 'v' %}{{ ns.a }}"), "v");
  EXPECT_EQ(ok("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(ok("{% set x %}a{{ 1 }}b{% endset %}[{{ x }}]"), "[a1b]");
}

TEST(ChatTemplate, Operators) {
  EXPECT_EQ(ok("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} "
               "{{ (1 + 2) * 3 }} {{ 2 - 3 - 4 }}"),
            "3 -4 1 2 3.5 1024 7 9 -5");
  EXPECT_EQ(ok("{{ 'a' ~ 1 ~ none }}|{{ 'ab' * 3 }}|{{ [1] + [2] }}"), "a1None|ababab|[1, 2]");
  EXPECT_EQ(ok("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ 'b' in 'abc' }} {{ 3 not in [1,2] }} {{ 'k' in {'k': 1} }}"),
            "x y True True True True");
  EXPECT_EQ(ok("{{ 'yes' if 1 > 0 else 'no' }}{{ 'x' if false }}"), "yes");
  EXPECT_EQ(ok("{{ 1 == 1.0 }} {{ [1, 'a'] == [1, 'a'] }} {{ 'a' < 'b' }} {{ 2 >= 3 }} {{ none == none }}"),
            "True True True False True");
  EXPECT_EQ(ok("{{ not 1 == 2 }} {{ -2 ** 2 }}"), "True 4");  // not binds looser than ==; unary minus tighter than **
  EXPECT_EQ(ok("{{ 0.1 + 0.2 }} {{ 1.0 }} {{ 1e20 }} {{ 2.5e-5 }} {{ 10 / 4 }} {{ 1e16 }}"),
            "0.30000000000000004 1.0 1e+20 2.5e-05 2.5 1e+16");
  EXPECT_EQ(ok("{{ ['a', 1, none, true, {'k': \"it's\"}] }}"), "['a', 1, None, True, {'k': \"it's\"}]");
}

TEST(ChatTemplate, LiteralsAndAccess) {
  EXPECT_EQ(ok("{{ 'a' 'b' }}|{{ 'a\\tb' }}|{{ \"q\\\"q\" }}|{{ '\\u00e9' }}"), "ab|a\tb|q\"q|é");
  EXPECT_EQ(ok("{{ {'a': {'b': 1}}['a']['b'] }}{{ {'a': {'b': 2}}.a.b }}"), "12");
  EXPECT_EQ(ok("{{ [1,2,3,4][1:] }} {{ [1,2,3,4][::-1] }} {{ [1,2,3,4][-2:] }} {{ 'abcdef'[1:4] }} {{ [1,2,3,4][::2] }} "
               "{{ 'héllo'[::-1] }} {{ [1,2,3][:-1] }} {{ 'abc'[-1] }}"),
            "[2, 3, 4] [4, 3, 2, 1] [3, 4] bcd [1, 3] olléh [1, 2] c");
  EXPECT_EQ(ok("{{ [1,2][5] is defined }}{{ {'a': 1}.b is defined }}{{ none.x is defined }}"), "FalseFalseFalse");
  EXPECT_EQ(ok("{{ (1, 2)[1] }}{{ () | length }}"), "20");
}

TEST(ChatTemplate, Filters) {
  EXPECT_EQ(ok("{{ '  hi  ' | trim }}|{{ 'héllo' | length }}|{{ 'Hello World' | upper }}|{{ [3,1,2] | sort | join(',') }}"
               "|{{ none | default('d') }}|{{ nothing | default('d') }}|{{ '' | default('d', true) }}|{{ [1,2,3] | first }}"
               "{{ [1,2,3] | last }}|{{ 'a-b-c' | replace('-', '+') }}|{{ '42' | int + 1 }}|{{ 'x' | int }}|{{ 3 | string }}"),
            "hi|5|HELLO WORLD|1,2,3|None|d|d|13|a+b+c|43|0|3");
  EXPECT_EQ(ok("{{ {'b': 1, 'a': [1, 'x', true, none, 1.5]} | tojson }}"), "{\"b\": 1, \"a\": [1, \"x\", true, null, 1.5]}");
  EXPECT_EQ(ok("{{ {'a': [1, 2], 'b': {}} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}");
  EXPECT_EQ(ok("{{ 'é\"\\n' | tojson }}"), "\"é\\\"\\n\"");
  Value::Array msgs;
  for (auto [r, c] : {std::pair{"user", "a"}, {"assistant", "b"}, {"user", "c"}}) {
    Value m = Value::object();
    m.set("role", Value(r));
    m.set("content", Value(c));
    msgs.push_back(m);
  }
  Value::Object vars{{"messages", Value(msgs)}};
  EXPECT_EQ(ok("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('+') }}|"
               "{{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='content') | list }}|"
               "{{ messages | map(attribute='role') | unique | list | length }}",
               vars),
            "a+c|['b']|2");
  EXPECT_EQ(ok("{{ {'b': 2, 'a': 1} | items | list }}|{{ ['x', 'y'] | map('upper') | join }}|{{ 'a\\nb' | indent(2) }}"),
            "[['b', 2], ['a', 1]]|XY|a\n  b");
  EXPECT_EQ(ok("{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}|{{ [1, 2, 3] | reverse | list }}|{{ -3 | abs }}"),
            "Hello World|Hello|[3, 2, 1]|3");
}

TEST(ChatTemplate, StringAndDictMethods) {
  EXPECT_EQ(ok("{{ 'a,b,,c'.split(',') }}|{{ '  x  y  '.split() }}|{{ 'a b c'.split(' ', 1) }}"),
            "['a', 'b', '', 'c']|['x', 'y']|['a', 'b c']");
  EXPECT_EQ(ok("{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi\\n'.lstrip('\\n') }}|{{ '  hi \\u3000'.strip() }}|{{ 'hi\\n\\n'.rstrip() }}"),
            "hi|hi\n|hi|hi");
  EXPECT_EQ(ok("{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith(('x', 'lo')) }}{{ 'Hello'.startswith('lo') }}"),
            "TrueTrueFalse");
  EXPECT_EQ(ok("{{ 'hello world'.title() }}|{{ 'aXb'.upper() }}{{ 'aXb'.lower() }}|{{ 'a</think>b'.split('</think>')[-1] }}"
               "|{{ 'aaa'.replace('a', 'b', 2) }}|{{ '-'.join(['x', 'y']) }}|{{ 'banana'.count('an') }}"),
            "Hello World|AXBaxb|b|bba|x-y|2");
  EXPECT_EQ(ok("{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('z') }}{{ {'a': 1}.get('z', 7) }}|{{ {'a': 1, 'b': 2}.keys() | list }}"
               "|{{ {'a': 1}.values() | list }}"),
            "1None7|['a', 'b']|[1]");
}

TEST(ChatTemplate, Tests) {
  EXPECT_EQ(ok("{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [1] is iterable }}"
               "{{ 3 is odd }}{{ 4 is divisibleby 2 }}{{ false is false }}{{ 1 is not none }}{{ 1 is number }}"
               "{{ 1.5 is integer }}{{ 2 is even }}{{ 'a' is equalto 'a' }}{{ x is undefined }}{{ 'abc' is lower }}"),
            "FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrue");
}

TEST(ChatTemplate, MacrosAndCallBlocks) {
  EXPECT_EQ(ok("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} "
               "{{ greet('Al', punct='?') }} {{ greet(name='Cy') }}"),
            "Hi Bob! Hi Al? Hi Cy!");
  EXPECT_EQ(ok("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}in{% endcall %}"),
            "<b>in</b>");
  // Macros see template-level variables, not the caller's loop variables.
  EXPECT_EQ(ok("{% set g = 'G' %}{% macro m() %}{{ g }}{{ i is defined }}{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}"),
            "GFalse");
  auto e = err("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}");
  EXPECT_TRUE(contains(e.message(), "takes 1 arguments")) << e.message();
}

TEST(ChatTemplate, RaiseExceptionCarriesMessage) {
  auto e = err("line one\n{% if true %}{{ raise_exception('Roles must alternate!') }}{% endif %}");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(e.message(), "Roles must alternate!")) << e.message();
  EXPECT_TRUE(contains(e.message(), "line 2 col")) << e.message();
}

TEST(ChatTemplate, SyntaxErrorsNameLineAndColumn) {
  auto e = err("a\n{% if x %}b");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(e.message(), "'if' opened at line 2 col 4 is never closed")) << e.message();
  e = err("{{ 1 + }}");
  EXPECT_TRUE(contains(e.message(), "line 1 col 8: expected an expression, got '}}'")) << e.message();
  e = err("{{ x $ y }}");
  EXPECT_TRUE(contains(e.message(), "unexpected character '$'")) << e.message();
  e = err("{% endfor %}");
  EXPECT_TRUE(contains(e.message(), "unknown statement 'endfor'")) << e.message();
  e = err("{{ 'abc }}");
  EXPECT_TRUE(contains(e.message(), "never closed")) << e.message();
  e = err("{# unterminated");
  EXPECT_TRUE(contains(e.message(), "comment")) << e.message();
  e = err("{% for %}{% endfor %}");
  EXPECT_TRUE(contains(e.message(), "line 1 col 8: expected a variable name")) << e.message();
  e = err("{{ f(a=1, 2) }}");
  EXPECT_TRUE(contains(e.message(), "positional argument after a keyword argument")) << e.message();
}

TEST(ChatTemplate, UnsupportedSyntaxIsNamed) {
  auto e = err("ok\n  {% include 'other.jinja' %}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(e.message(), "'{% include %}'")) << e.message();
  EXPECT_TRUE(contains(e.message(), "line 2 col 6")) << e.message();
  e = err("{{ x | frobnicate }}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(e.message(), "filter 'frobnicate'")) << e.message();
  e = err("{{ x is frobnicated }}");
  EXPECT_TRUE(contains(e.message(), "test 'frobnicated'")) << e.message();
  e = err("{% for x in y recursive %}{% endfor %}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  e = err("{{ f(*args) }}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  e = err("{{ 1 < x < 3 }}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(e.message(), "chained comparisons")) << e.message();
  e = err("{% raw %}x{% endraw %}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  e = err("{% generation %}x{% endgeneration %}");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
}

TEST(ChatTemplate, RuntimeErrors) {
  auto e = err("\n  {{ 'a' + 1 }}");
  EXPECT_EQ(e.code(), ErrorCode::kExecution);
  EXPECT_TRUE(contains(e.message(), "line 2 col")) << e.message();
  EXPECT_TRUE(contains(e.message(), "'string' and 'integer'")) << e.message();
  e = err("{{ foo.bar }}");
  EXPECT_TRUE(contains(e.message(), "'foo' is undefined")) << e.message();
  e = err("{{ nope() }}");
  EXPECT_TRUE(contains(e.message(), "'nope' is not callable")) << e.message();
  e = err("{{ 1 // 0 }}");
  EXPECT_TRUE(contains(e.message(), "by zero")) << e.message();
  e = err("{% set x = 1 %}{% set x.y = 2 %}");
  EXPECT_TRUE(contains(e.message(), "not a namespace")) << e.message();
  e = err("{{ 9223372036854775807 + 1 }}");
  EXPECT_TRUE(contains(e.message(), "overflow")) << e.message();
  e = err("{% for a, b in [1] %}{% endfor %}");
  EXPECT_TRUE(contains(e.message(), "cannot unpack")) << e.message();
}

TEST(ChatTemplate, LimitsStopHostileTemplates) {
  auto e = err("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  hfs::RenderLimits small;
  small.max_output_bytes = 100;
  e = err("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", {}, small);
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  e = err("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}");
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  e = err("{% set ns = namespace(s=[1]) %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}");
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  EXPECT_TRUE(contains(e.message(), "items exceeds the limit 1048576")) << e.message();
  hfs::RenderLimits few_items;
  few_items.max_items = 10;
  EXPECT_EQ(err("{{ [1, 2, 3] * 4 }}", {}, few_items).code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(err("{{ [1, 2, 3, 4, 5, 6] + [7, 8, 9, 10, 11] }}", {}, few_items).code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(err("{{ range(11) | length }}", {}, few_items).code(), ErrorCode::kResourceExhausted);
  auto fits = render("{{ range(10) | length }}{{ ([1, 2, 3] * 3) | length }}", {}, few_items);
  ASSERT_TRUE(fits.ok()) << fits.error().to_string();
  EXPECT_EQ(fits.value(), "109");
  e = err("{{ 'x' * 100000000000 }}");
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  e = err("{{ range(100000000000) | length }}");
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  hfs::RenderLimits few_steps;
  few_steps.max_steps = 1000;
  e = err("{% for i in range(900) %}{% for j in range(900) %}{% endfor %}{% endfor %}", {}, few_steps);
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.message();
  // Deep nesting is refused by the parser instead of overflowing the stack.
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  e = err(deep);
  EXPECT_TRUE(contains(e.message(), "nesting deeper")) << e.message();
  std::string deep_blocks;
  for (int i = 0; i < 500; ++i) deep_blocks += "{% if true %}";
  e = err(deep_blocks);
  EXPECT_TRUE(contains(e.message(), "nesting deeper")) << e.message();
}

TEST(ChatTemplate, StrftimeNowUsesInjectedClock) {
  auto r = render("{{ strftime_now('%Y-%m-%d %H:%M:%S %a %A %b %B %j %y %p %I %%') }}", {}, {}, 0);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r.value(), "1970-01-01 00:00:00 Thu Thursday Jan January 001 70 AM 12 %");
  r = render("{{ strftime_now('%d %b %Y|%j|%a %A|%I %p|%y|%e') }}", {}, {}, 1709210096);  // 2024-02-29 12:34:56 UTC
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r.value(), "29 Feb 2024|060|Thu Thursday|12 PM|24|29");
  EXPECT_EQ(ok("{{ strftime_now is defined }}"), "False");
}

TEST(ChatTemplate, RenderContextBuildsHfVariables) {
  auto t = ChatTemplate::parse(
      "{{ bos_token is defined }}|{{ eos_token }}|{{ tools is none }}|{{ add_generation_prompt }}|"
      "{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ m.reasoning_content is defined }};{% endfor %}|{{ custom }}");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ChatContext ctx;
  ctx.messages = {{"user", "hi", {}}, {"assistant", "yo", {{"reasoning_content", Value("r")}}}};
  ctx.eos_token = "</s>";
  ctx.add_generation_prompt = true;
  ctx.extra["custom"] = Value(int64_t{7});
  auto out = t->render(ctx);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out.value(), "False|</s>|True|True|user:hi:False;assistant:yo:True;|7");
  // A null content in extra replaces the string field.
  ChatContext c2;
  c2.messages = {{"assistant", "ignored", {{"content", Value()}}}};
  auto t2 = ChatTemplate::parse("{{ messages[0].content is none }}");
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->render(c2).value(), "True");
}

TEST(ChatTemplate, FromTokenizerConfig) {
  auto t = ChatTemplate::from_tokenizer_config(R"({"bos_token": "<s>", "chat_template": "{{ messages[0].content }}!"})");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ChatContext ctx;
  ctx.messages = {{"user", "hey", {}}};
  EXPECT_EQ(t->render(ctx).value(), "hey!");
  const char* listed = R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})";
  auto d = ChatTemplate::from_tokenizer_config(listed);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->render(ctx).value(), "D");
  auto tu = ChatTemplate::from_tokenizer_config(listed, "tool_use");
  ASSERT_TRUE(tu.ok());
  EXPECT_EQ(tu->render(ctx).value(), "T");
  auto missing_name = ChatTemplate::from_tokenizer_config(listed, "rag");
  ASSERT_FALSE(missing_name.ok());
  EXPECT_EQ(missing_name.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(missing_name.error().message(), "default, tool_use")) << missing_name.error().message();
  auto none = ChatTemplate::from_tokenizer_config(R"({"eos_token": "</s>"})");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config("{not json").ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(R"({"chat_template": 5})").ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(R"({"chat_template": [{"name": 1}]})").ok());
  auto bad = ChatTemplate::from_tokenizer_config(R"({"chat_template": "{% if %}"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error().message(), "line 1 col")) << bad.error().message();
}

TEST(ChatTemplate, EmptyTemplateObjectFailsCleanly) {
  ChatTemplate t;
  auto r = t.render(ChatContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
