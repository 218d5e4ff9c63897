#!/usr/bin/python3
"""Reference renderer for Strix's Jinja parity tests.

Builds the environment exactly as Hugging Face transformers'
_compile_jinja_template does (ImmutableSandboxedEnvironment with
trim_blocks/lstrip_blocks, the loopcontrols extension, HF's tojson,
raise_exception and strftime_now globals, and a `generation` block tag that
renders its body) and renders a batch of cases.

Run with Debian's /usr/bin/python3 and python3-jinja2.

usage: jinja_ref.py CASES.json OUT.json
CASES: [{"template": str, "context": {...}} |
        {"template": str, "chat": {"messages", "tools", "add_generation_prompt",
                                   "bos_token", "eos_token", "kwargs"}}]
OUT:   [{"ok": true, "out": str} | {"ok": false, "error": str}]

STRIX_FIXED_DATE ("YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS") replaces the clock
behind strftime_now, as in Strix.
"""
import json
import os
import sys
import warnings
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    # transformers' AssistantTracker, minus the index tracking.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    fixed = os.environ.get("STRIX_FIXED_DATE")
    if fixed:
        fmt = "%Y-%m-%d %H:%M:%S" if len(fixed) > 10 else "%Y-%m-%d"
        return datetime.strptime(fixed.replace("T", " "), fmt).strftime(format)
    return datetime.now().strftime(format)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                       extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def render_case(env, case):
    # Compiled once per template text, as transformers caches with lru_cache.
    if case["template"] not in _compiled:
        _compiled[case["template"]] = env.from_string(case["template"])
    tmpl = _compiled[case["template"]]
    if "chat" in case:
        c = case["chat"]
        kwargs = {"bos_token": c.get("bos_token", ""), "eos_token": c.get("eos_token", "")}
        kwargs.update(c.get("kwargs") or {})
        return tmpl.render(messages=c["messages"], tools=c.get("tools"), documents=None,
                           add_generation_prompt=c.get("add_generation_prompt", True), **kwargs)
    return tmpl.render(**case.get("context", {}))


def main():
    warnings.filterwarnings("ignore")  # jinja2's generated code trips SyntaxWarnings on things like 1[0]
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    env = make_env()
    results = []
    for case in cases:
        try:
            results.append({"ok": True, "out": render_case(env, case)})
        except Exception as e:  # every jinja2 failure counts as "raises"
            results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
