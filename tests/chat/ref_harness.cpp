#include "core/source_dir.h"
#include "ref_harness.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"
#include "core/error.h"

namespace strix::test {

using jinja::Value;

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool have_reference() {
  return std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") == 0;
}

std::vector<RenderResult> render_reference(const std::vector<JinjaCase>& cases) {
  Value arr = Value::new_list();
  for (const auto& c : cases) {
    Value o = Value::new_dict();
    o.dict->set("template", Value::string(c.tmpl));
    if (c.is_chat) {
      Value ch = Value::new_dict();
      ch.dict->set("messages", c.chat.messages);
      ch.dict->set("tools", c.chat.tools);
      ch.dict->set("add_generation_prompt", Value::boolean(c.chat.add_generation_prompt));
      ch.dict->set("bos_token", Value::string(c.chat.bos_token));
      ch.dict->set("eos_token", Value::string(c.chat.eos_token));
      Value kw = Value::new_dict();
      for (const auto& kv : c.chat.kwargs) kw.dict->set(kv.first, kv.second);
      ch.dict->set("kwargs", kw);
      o.dict->set("chat", ch);
    } else {
      o.dict->set("context", c.context.is_dict() ? c.context : Value::new_dict());
    }
    arr.list->items.push_back(o);
  }
  char dir[] = "/tmp/strix_jinja_XXXXXX";
  if (!mkdtemp(dir)) throw Error("mkdtemp failed");
  std::string in = std::string(dir) + "/cases.json", out = std::string(dir) + "/out.json";
  {
    std::ofstream f(in, std::ios::binary);
    f << jinja::to_json(arr, {});
  }
  std::string cmd = "/usr/bin/python3 " + std::string(STRIX_SOURCE_DIR) + "/tests/chat/jinja_ref.py " + in + " " + out;
  if (std::system(cmd.c_str()) != 0) throw Error("reference renderer failed: " + cmd);
  Value res = jinja::parse_json(read_text_file(out));
  std::remove(in.c_str());
  std::remove(out.c_str());
  rmdir(dir);
  std::vector<RenderResult> r;
  for (const auto& v : res.list->items) {
    RenderResult rr;
    rr.ok = v.dict->find("ok")->b;
    if (rr.ok) rr.out = v.dict->find("out")->s;
    else rr.error = v.dict->find("error")->s;
    r.push_back(rr);
  }
  if (r.size() != cases.size()) throw Error("reference returned a wrong number of results");
  return r;
}

RenderResult render_strix(const JinjaCase& c) {
  RenderResult r;
  try {
    if (c.is_chat) {
      r.out = chat::apply_chat_template(c.tmpl, c.chat);
    } else {
      jinja::Body body = jinja::parse_template(c.tmpl);
      std::vector<std::pair<std::string, Value>> ctx;
      if (c.context.is_dict()) ctx = c.context.dict->items;
      jinja::RenderOptions opt;
      if (const char* fixed = std::getenv("STRIX_FIXED_DATE")) opt.fixed_date = fixed;
      r.out = jinja::render(body, ctx, opt);
    }
    r.ok = true;
  } catch (const Refusal& e) {
    r.error = std::string("REFUSED: ") + e.what();  // a refusal never matches a rendering
  } catch (const Error& e) {
    r.error = e.what();
  }
  return r;
}

std::string compare_results(const RenderResult& ref, const RenderResult& ours) {
  if (!ref.ok && !ours.ok && ours.error.rfind("REFUSED", 0) != 0) return "";
  if (ref.ok != ours.ok) {
    return ref.ok ? "jinja2 rendered but Strix raised: " + ours.error + "\n  jinja2: [" + ref.out + "]"
                  : "jinja2 raised (" + ref.error + ") but Strix rendered: [" + ours.out + "]";
  }
  if (!ref.ok) return "Strix refused: " + ours.error;
  if (ref.out == ours.out) return "";
  size_t k = 0;
  while (k < ref.out.size() && k < ours.out.size() && ref.out[k] == ours.out[k]) ++k;
  size_t from = k > 40 ? k - 40 : 0;
  return "first difference at byte " + std::to_string(k) + "\n  jinja2: [" + ref.out.substr(from, 100) + "]\n  strix:  [" +
         ours.out.substr(from, 100) + "]";
}

}  // namespace strix::test
