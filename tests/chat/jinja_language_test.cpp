// Language features, each as a small inline template rendered by Strix and by
// Python's jinja2 (HF environment); outputs must match byte for byte, and
// where jinja2 raises Strix must raise too.
#include <gtest/gtest.h>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"
#include "core/error.h"
#include "ref_harness.h"

namespace strix::test {
namespace {

struct Inline {
  const char* tmpl;
  const char* context;  // JSON object
};

const Inline kCases[] = {
    // literals, printing Python values
    {"{{ 1 }}|{{ 1.5 }}|{{ -2 }}|{{ 1e3 }}|{{ 0.1 + 0.2 }}|{{ 1e-7 }}|{{ 1e16 }}|{{ 123456789.125 }}", "{}"},
    {"{{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ 'a' 'b' }}|{{ \"q'uote\" }}", "{}"},
    {"{{ [1, 'a', none, true, 2.0] }}|{{ {'a': 1, 'b': [1]} }}|{{ (1,) }}|{{ (1, 'x') }}|{{ () }}", "{}"},
    {"{{ ['it\\'s', \"a\\\"b\", 'nl\\n'] }}", "{}"},
    {"{{ x }}|{{ x.y is defined }}|{{ d }}", "{\"d\": {\"k\": [1, {\"z\": null}], \"u\": \"\\u00e9\\u4e2d\"}}"},
    // arithmetic
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}", "{}"},
    {"{{ 'ab' * 3 }}|{{ [1] * 2 }}|{{ 'a' ~ 1 ~ none ~ x }}|{{ [1] + [2] }}|{{ 1 + 2 * 3 - 4 }}|{{ -(3) }}|{{ +4 }}", "{}"},
    {"{{ 'a' + 1 }}", "{}"},
    {"{{ 1 / 0 }}", "{}"},
    {"{{ x + 1 }}", "{}"},
    // comparisons and logic
    {"{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ [1,2] == [1,2] }} {{ 'b' > 'a' }} {{ 2 >= 3 }} {{ true == 1 }}", "{}"},
    {"{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in d }} {{ 'z' not in d }} {{ not 1 }} {{ 1 and 'x' }} {{ 0 or 'y' }} {{ '' and 1 }}",
     "{\"d\": {\"k\": 1}}"},
    {"{{ 1 < 'a' }}", "{}"},
    {"{{ 'yes' if x else 'no' }}|{{ 'yes' if 1 }}|{{ 'a' if false else 'b' if true else 'c' }}", "{}"},
    // attribute / item access, slicing
    {"{{ m.role }}|{{ m['content'] }}|{{ l[0] }}|{{ l[-1] }}|{{ l[5] }}|{{ s[1] }}|{{ m.missing }}|{{ l.0 }}",
     "{\"m\": {\"role\": \"user\", \"content\": \"hi\"}, \"l\": [1, 2, 3], \"s\": \"h\\u00e9llo\"}"},
    {"{{ l[::-1] }}|{{ l[1:] }}|{{ l[:-1] }}|{{ l[::2] }}|{{ s[::-1] }}|{{ s[1:3] }}|{{ l[-2:] }}|{{ l[5:] }}|{{ l[3:0:-1] }}",
     "{\"l\": [1, 2, 3, 4], \"s\": \"h\\u00e9llo\"}"},
    {"{{ x.y }}", "{}"},
    {"{{ x.y.z }}", "{\"x\": {}}"},
    {"{{ d.items() | list }}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.get('a') }}|{{ d.get('q', 5) }}|{{ d.get('q') }}",
     "{\"d\": {\"a\": 1, \"b\": \"two\"}}"},
    // string methods
    {"{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ t.strip('x') }}|{{ t.lstrip('xy') }}|{{ t.rstrip('x') }}",
     "{\"s\": \"  a b \\n\", \"t\": \"xxyaxx\"}"},
    {"{{ s.split() }}|{{ s.split(' ') }}|{{ s.split(',', 1) }}|{{ s.rsplit(',', 1) }}|{{ s.split(',') }}|{{ ' a  b '.split(none, 1) }}",
     "{\"s\": \"a,b, c\"}"},
    {"{{ s.upper() }}|{{ s.lower() }}|{{ s.title() }}|{{ s.capitalize() }}|{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 1) }}",
     "{\"s\": \"heLLo wOrld-x\"}"},
    {"{{ s.startswith('he') }}|{{ s.endswith('ld') }}|{{ s.startswith(('x', 'h')) }}|{{ s.find('l') }}|{{ s.find('z') }}|{{ s.count('l') }}|{{ '-'.join(['a', 'b']) }}",
     "{\"s\": \"hello world\"}"},
    {"{{ s.split('</think>')[-1].lstrip('\\n') }}", "{\"s\": \"<think>\\nr\\n</think>\\n\\nanswer\"}"},
    {"{{ l.append(1) }}", "{\"l\": []}"},
    // filters
    {"{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ s | capitalize }}|{{ s | title }}|{{ s | length }}|{{ l | count }}",
     "{\"s\": \"  hELLo (wor-ld) \", \"l\": [1, 2]}"},
    {"{{ l | join(', ') }}|{{ l | join }}|{{ u | join('/', attribute='n') }}|{{ l | first }}|{{ l | last }}|{{ l | reverse | list }}|{{ 'abc' | reverse }}",
     "{\"l\": [1, 2, 3], \"u\": [{\"n\": \"a\"}, {\"n\": \"b\"}]}"},
    {"{{ u | map(attribute='n') | list }}|{{ l | map('string') | join }}|{{ names | map('upper') | list }}|{{ u | map(attribute='q', default='-') | list }}",
     "{\"l\": [1, 2], \"u\": [{\"n\": \"a\"}, {\"n\": \"b\"}], \"names\": [\"x\", \"y\"]}"},
    {"{{ l | select('odd') | list }}|{{ l | reject('odd') | list }}|{{ l | select | list }}|{{ u | selectattr('on') | map(attribute='n') | list }}|{{ u | rejectattr('n', 'equalto', 'a') | list }}|{{ l | select('gt', 1) | list }}",
     "{\"l\": [0, 1, 2, 3], \"u\": [{\"n\": \"a\", \"on\": true}, {\"n\": \"b\", \"on\": false}]}"},
    {"{{ d | items | list }}|{{ d | dictsort }}|{{ d | dictsort(by='value') }}|{{ d | dictsort(reverse=true) }}",
     "{\"d\": {\"b\": 1, \"a\": 3, \"C\": 2}}"},
    {"{{ s | replace('a', 'b') }}|{{ x | default('dflt') }}|{{ '' | default('e', true) }}|{{ '' | d('e') }}|{{ none | default('n') }}",
     "{\"s\": \"banana\"}"},
    {"{{ l | list }}|{{ 'ab' | list }}|{{ 5 | string }}|{{ '42' | int }}|{{ 'x' | int }}|{{ 3.9 | int }}|{{ '2.5' | float }}|{{ -3 | abs }}|{{ 2.567 | round(2) }}|{{ 2.5 | round }}|{{ 3 | float }}",
     "{\"l\": [1]}"},
    {"{{ s | indent }}|{{ s | indent(2, true) }}|{{ s | indent('> ', first=true, blank=true) }}", "{\"s\": \"a\\n\\nb\\nc\"}"},
    {"{{ '<a href=\"x\">&\\'' | e }}|{{ '<b>' | escape }}|{{ '<i>' | safe }}", "{}"},
    {"{{ l | unique | list }}|{{ l | sort }}|{{ l | sort(reverse=true) }}|{{ w | sort }}|{{ w | sort(case_sensitive=true) }}|{{ u | sort(attribute='n') | map(attribute='n') | join }}",
     "{\"l\": [3, 1, 3, 2], \"w\": [\"b\", \"A\", \"a\", \"C\"], \"u\": [{\"n\": \"z\"}, {\"n\": \"m\"}]}"},
    {"{{ l | sum }}|{{ l | min }}|{{ l | max }}|{{ u | sum(attribute='v') }}|{{ 'a b  c' | wordcount }}|{{ l | batch(2) | list }}|{{ [1.5, 2] | sum }}",
     "{\"l\": [3, 1, 2], \"u\": [{\"v\": 1}, {\"v\": 2.5}]}"},
    {"{{ x | tojson }}", "{\"x\": {\"a\": [1, 2.5, \"\\u00e9\\\"\\n\", null, true], \"b\": {}, \"c\": []}}"},
    {"{{ x | tojson(indent=2) }}|{{ x | tojson(separators=(',', ':')) }}|{{ x | tojson(sort_keys=true) }}|{{ 'x\\u0001<>&' | tojson }}",
     "{\"x\": {\"b\": [1, {\"c\": 2}], \"a\": \"s\", \"e\": []}}"},
    {"{{ x | tojson }}", "{}"},
    {"{{ x | nosuchfilter }}", "{}"},
    // tests
    {"{{ x is defined }}{{ x is undefined }}{{ n is none }}{{ n is not none }}{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1 is integer }}{{ 1.0 is float }}",
     "{\"n\": null}"},
    {"{{ 's' is string }}{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ 's' is iterable }}{{ l is sequence }}{{ 1 is iterable }}{{ true is boolean }}{{ false is false }}{{ true is true }}{{ 1 is true }}",
     "{\"d\": {}, \"l\": []}"},
    {"{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 3 is gt 2 }}{{ 2 is le 2 }}{{ 2 is ge 3 }}{{ 'a' is in 'abc' }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 1 is equalto 1 }}",
     "{}"},
    {"{{ f is callable }}{{ range is callable }}{{ 'x' is escaped }}{{ ('x' | e) is escaped }}", "{}"},
    // if / for / loop
    {"{% if a %}A{% elif b %}B{% else %}C{% endif %}{% if not a and not b %}!{% endif %}", "{\"b\": 1}"},
    {"{% for x in l %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}:{{ x }};{% endfor %}",
     "{\"l\": [\"a\", \"b\", \"c\"]}"},
    {"{% for x in l %}{{ loop.previtem | default('^') }}{{ x }}{{ loop.nextitem | default('$') }} {{ loop.cycle('o', 'e') }} {% endfor %}", "{\"l\": [1, 2, 3]}"},
    {"{% for x in l if x > 1 %}{{ loop.index }}{{ x }}{% else %}empty{% endfor %}|{% for x in [] %}no{% else %}else{% endfor %}", "{\"l\": [1, 2, 3]}"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for c in 'h\\u00e9' %}[{{ c }}]{% endfor %}",
     "{\"d\": {\"a\": 1, \"b\": 2}}"},
    {"{% for x in l %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", "{\"l\": [1, 2, 3, 4, 5]}"},
    {"{% for r in rows %}{% for c in r %}{{ loop.index }}{{ c }}{% endfor %}|{{ loop.index }};{% endfor %}", "{\"rows\": [[\"a\", \"b\"], [\"c\"]]}"},
    {"{% for x in none %}{% endfor %}", "{}"},
    {"{% for x in undefined_thing %}x{% else %}none{% endfor %}", "{}"},
    // set, scoping, namespace
    {"{% set x = 1 %}{% set y, z = [2, 3] %}{{ x }}{{ y }}{{ z }}{% for i in [1] %}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}", "{}"},
    {"{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}", "{}"},
    {"{% set b %}  block {{ 1 }} {% endset %}[{{ b }}]{% set c | trim | upper %}  xy {% endset %}[{{ c }}]", "{}"},
    {"{% set d = {'a': 1} %}{% set d.a = 2 %}", "{}"},
    {"{{ range(3) | list }}|{{ range(1, 7, 2) | list }}|{{ range(5, 0, -2) | list }}|{{ dict(a=1, b='x') }}", "{}"},
    // macros and call blocks
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}", "{}"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %}", "{}"},
    {"{% macro m(x) %}{{ x }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}", "{}"},
    {"{% filter upper %}hello {{ 'x' }}{% endfilter %}|{% filter trim | title %}  a b  {% endfilter %}", "{}"},
    {"{% raw %}{{ not rendered }} {% if %}{% endraw %}|{% generation %}gen {{ 1 }}{% endgeneration %}", "{}"},
    {"{# comment #}a{#- trimmed -#}  b", "{}"},
    // whitespace control with trim_blocks + lstrip_blocks
    {"<\n  {% if true %}\n    x\n  {% endif %}\n>", "{}"},
    {"a  {%- if true -%}  b  {%- endif -%}  c\n{{- ' d ' -}}\n e", "{}"},
    {"{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\nend", "{}"},
    {"  {{ 'v' }}  {% if 1 %}x{% endif %}\n\t{% if 1 +%}\ny{%+ endif %}\n", "{}"},
    {"line\n    {# c #}\nafter\n  {%- set x = 1 %}\n{{ x }}", "{}"},
    {"{% raw -%}   r {{ x }}   {%- endraw %}\nz", "{}"},
    {"  {% raw %}a{% endraw %}\nb", "{}"},
    {"{{ \"{{\" }}{{ {'a': {'b': 1}} }}{{ '}}' }}", "{}"},
    {"trailing newline dropped\n", "{}"},
    {"two trailing newlines\n\n", "{}"},
    {"crlf\r\nlines {{ 'a\r\nb' }}\r\n{% if 1 %}\r\nx\r\n{% endif %}\r\n", "{}"},
    {"{{ s }}", "{\"s\": \"data\\r\\nkeeps crlf\\n\"}"},
    // scoping details
    {"{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}", "{}"},
    {"{% macro m(n) %}{% set ns.t = ns.t + n %}{% endmacro %}{% set ns = namespace(t=0) %}{% for i in [1, 2, 3] %}{{ m(i) }}{% endfor %}{{ ns.t }}", "{}"},
    {"{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{{ loop.depth }}{% endfor %}{{ loop.index }}{% endfor %}", "{}"},
    {"{% set l = [3, 1] %}{% for x in l | sort %}{{ x }}{% endfor %}{{ l }}", "{}"},
    {"{{ (1, 2) == [1, 2] }}{{ [1, [2, 3]][1][0] }}{{ {'a': {'b': 'c'}}.a.b }}{{ 'abc'[-1] }}{{ none is none }}{{ 3 in range(5) }}", "{}"},
    {"{{ 'Hello' ~ ' ' ~ name | default('World') | upper }}{{ ('x' if true) ~ ('y' if false) }}", "{}"},
    {"{% if messages[0]['content'] is string %}str{% elif messages[0]['content'] is iterable %}iter{% endif %}",
     "{\"messages\": [{\"content\": [1]}]}"},
    // unknown filters/tests: compile-time errors except in if bodies and conditional expressions
    {"{% if x %}{{ 1|nof }}{% endif %}ok", "{}"},
    {"{% if 1|nof %}{% endif %}ok", "{}"},
    {"{{ (1|nof) if x else 2 }}", "{}"},
    {"{{ 2 if x else (1|nof) }}", "{}"},
    {"{% if x %}{% for i in l %}{{ 1|nof }}{% endfor %}{% endif %}", "{}"},
    {"{% if x %}{% set y = 1|nof %}{% endif %}ok", "{}"},
    {"{% if x %}{{ 1 is nott }}{% endif %}ok", "{}"},
    {"{% if x %}{% macro m() %}{{ 1|nof }}{% endmacro %}{% endif %}ok", "{}"},
    {"{% if x %}{% filter nof %}a{% endfilter %}{% endif %}ok", "{}"},
    {"{% if x %}{% if y %}{{ 1|nof }}{% endif %}{% endif %}ok", "{}"},
    // generators and dict views
    {"{{ d.items() }}|{{ d.keys() }}|{{ d.values() }}|{{ d.items() | length }}|{{ (l | select('odd')) is iterable }}", "{\"d\": {\"a\": 1}, \"l\": [1]}"},
    {"{% set g = l | select('odd') %}{% if g %}T{% endif %}{% for x in g %}{{ x }}{% endfor %}|{% for x in g %}{{ x }}{% endfor %}|{{ g | list }}", "{\"l\": [1, 2, 3]}"},
    {"{% set g = l | map('upper') %}{% if l | select('gt', 10) %}truthy{% endif %}{{ g | length }}", "{\"l\": [\"a\"]}"},
    {"{% set g = none | selectattr('x') %}lazy-ok{{ g | list }}", "{}"},
    {"{{ l | reverse | join }}{{ l | unique | first }}{{ l | batch(2) | list }}{{ d | items | list }}", "{\"l\": [1, 2, 1], \"d\": {\"k\": 2}}"},
    {"{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}", "{}"},
    {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}"},
    // globals
    {"{{ strftime_now('%Y-%m-%d %d %b %A %j') }}", "{}"},
    {"{{ raise_exception('custom failure') }}", "{}"},
    {"{% if x %}{{ raise_exception('no') }}{% endif %}ok", "{}"},
    {"{{ undefined_fn() }}", "{}"},
    // unicode
    {"{{ s | length }}|{{ s[0] }}|{{ s | upper }}|{{ s | tojson }}|{{ s.find('\\u4e2d') }}", "{\"s\": \"\\u00e9\\u4e2d\\ud83d\\ude00x\"}"},
};

TEST(JinjaLanguage, matches_python_jinja2_on_inline_cases) {
  ASSERT_TRUE(have_reference()) << "/usr/bin/python3 with jinja2 is missing: run ./scripts/deps.sh (Debian python3-jinja2)";
  setenv("STRIX_FIXED_DATE", "2024-03-09", 1);
  std::vector<JinjaCase> cases;
  for (const auto& c : kCases) {
    JinjaCase jc;
    jc.name = c.tmpl;
    jc.tmpl = c.tmpl;
    jc.context = jinja::parse_json(c.context);
    cases.push_back(jc);
  }
  std::vector<RenderResult> ref = render_reference(cases);
  int same = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    std::string diff = compare_results(ref[k], render_strix(cases[k]));
    if (diff.empty()) ++same;
    else ADD_FAILURE() << "case " << k << ": " << cases[k].tmpl << "\n" << diff;
  }
  std::printf("[ jinja ] %d/%zu inline cases identical to jinja2\n", same, cases.size());
}

TEST(JinjaLanguage, refuses_unimplemented_constructs_by_name_and_line) {
  const char* tmpls[] = {"a\n{% include 'x' %}", "{% for x in l recursive %}{% endfor %}", "{% extends 'b' %}",
                         "{{ x | truncate(3) }}", "{{ 's'.format(1) }}", "{{ '%s' % 1 }}",
                         "{{ x.zfill(3) }}", "{% set c = cycler(1, 2) %}", "{% for x in [1] %}{{ loop.changed(x) }}{% endfor %}"};
  for (const char* t : tmpls) {
    try {
      jinja::Body b = jinja::parse_template(t);
      jinja::render(b, {{"l", jinja::Value::new_list()}, {"x", jinja::Value::string("abcdef")}});
      ADD_FAILURE() << "no refusal for " << t;
    } catch (const Refusal& e) {
      EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
    }
  }
}

TEST(JinjaLanguage, rejects_syntax_errors) {
  for (const char* t : {"{% if x %}", "{{ 1 + }}", "{% endfor %}", "{{ (1 }}", "{% do x.append(1) %}", "{% bogus %}"}) {
    EXPECT_THROW(jinja::parse_template(t), Error) << t;
  }
}

}  // namespace
}  // namespace strix::test
