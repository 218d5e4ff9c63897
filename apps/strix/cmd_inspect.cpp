// strix inspect FILE [--json] [--full]: a GGUF file's header, metadata and tensor
// table, in the spirit of gguf-py's gguf-dump. Malformed files are refused by the
// reader with one line naming the key or tensor and the byte offset (exit 1).
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "quant/types.h"

namespace strix::app {

namespace {

constexpr size_t kSummaryItems = 8;  // array items shown unless --full

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix inspect FILE [--json] [--full]\n"
               "\n"
               "Show a GGUF file's header, metadata (key, type, value) and tensor table.\n"
               "A split set (name-00001-of-0000N.gguf) is read from its first part.\n"
               "\n"
               "  --json   one JSON object: header, metadata, tensors\n"
               "  --full   do not summarize long arrays (first %zu items + count by default)\n"
               "  -h       this help\n",
               kSummaryItems);
}

std::string type_label(const GgufValue& v) {
  if (!v.is_array()) return gguf_type_name(v.type());
  std::string label = "array[";
  // Nested arrays: the element type of the first item, when there is one.
  if (v.elem_type() == GgufType::ARRAY && !v.items().empty()) {
    label += type_label(v.items()[0]);
  } else {
    label += gguf_type_name(v.elem_type());
  }
  return label + "]";
}

std::string tensor_type_name(uint32_t type) {
  const char* name = type_name(type);
  return name ? name : "unknown(" + std::to_string(type) + ")";
}

std::string shape_text(const GgufTensor& t) {
  std::string s = "[";
  for (int d = 0; d < t.n_dims; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.ne[d]);
  }
  return s + "]";
}

using Json = nlohmann::ordered_json;

// A value as JSON. Arrays past kSummaryItems (unless `full`) keep their first
// items; nested ones become {"count": N, "first": [...]}, the top level says
// "count" and "truncated" next to "value" instead (print_json).
Json value_json(const GgufValue& v, bool full, bool top = false) {
  switch (v.type()) {
    case GgufType::STRING:
      return v.as_string();
    case GgufType::BOOL:
      return v.as_bool();
    case GgufType::FLOAT32:
    case GgufType::FLOAT64:
      return v.raw_float();
    case GgufType::ARRAY: {
      Json items = Json::array();
      const auto& all = v.items();
      const size_t n = full ? all.size() : std::min(all.size(), kSummaryItems);
      for (size_t i = 0; i < n; ++i) items.push_back(value_json(all[i], full));
      if (top || full || all.size() <= kSummaryItems) return items;
      // Summarized: the first items and how many there are.
      return Json{{"count", all.size()}, {"first", std::move(items)}};
    }
    case GgufType::INT8:
    case GgufType::INT16:
    case GgufType::INT32:
    case GgufType::INT64:
      return v.as_i64();
    default:
      return v.as_u64();
  }
}

void print_json(const GgufFile& f, bool full) {
  Json out;
  const GgufSplitInfo& head = f.splits()[0];
  out["file"] = head.path;
  out["version"] = f.version();
  out["n_kv"] = head.n_kv;
  out["n_tensors"] = f.tensors().size();
  out["alignment"] = f.alignment();
  out["data_offset"] = head.data_offset;
  if (f.splits().size() > 1) {
    Json splits = Json::array();
    for (const auto& s : f.splits()) {
      splits.push_back({{"path", s.path}, {"n_tensors", s.n_tensors}, {"data_offset", s.data_offset}});
    }
    out["splits"] = std::move(splits);
  }
  Json meta = Json::object();
  for (const auto& kv : f.kvs()) {
    Json entry = {{"type", type_label(kv.value)}};
    if (kv.value.is_array()) {
      entry["count"] = kv.value.items().size();
      entry["truncated"] = !full && kv.value.items().size() > kSummaryItems;
    }
    entry["value"] = value_json(kv.value, full, true);
    meta[kv.key] = std::move(entry);
  }
  out["metadata"] = std::move(meta);
  Json tensors = Json::array();
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    Json shape = Json::array();
    for (int d = 0; d < t.n_dims; ++d) shape.push_back(t.ne[d]);
    Json entry = {{"index", i},
                  {"name", t.name},
                  {"type", tensor_type_name(t.type)},
                  {"type_id", t.type},
                  {"shape", shape},
                  {"offset", t.offset},
                  {"bytes", t.nbytes},
                  {"file_offset", t.file_offset}};
    if (f.splits().size() > 1) entry["split"] = t.split;
    tensors.push_back(std::move(entry));
  }
  out["tensors"] = std::move(tensors);
  // Metadata strings from a file need not be valid UTF-8: replace, never throw.
  const std::string text = out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

void print_text(const GgufFile& f, bool full) {
  const GgufSplitInfo& head = f.splits()[0];
  std::printf("%s: GGUF v%u, %zu KV, %zu tensors, alignment %llu, data offset %llu\n", head.path.c_str(), f.version(),
              f.kvs().size(), f.tensors().size(), static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(head.data_offset));
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  const std::string arch =
      f.find("general.architecture") && f.find("general.architecture")->is_string() ? f.architecture() : "(none)";
  std::printf("architecture %s, %zu tensors, %s tokens\n", arch.c_str(), f.tensors().size(),
              tokens && tokens->is_array() ? std::to_string(tokens->items().size()).c_str() : "no");
  if (f.splits().size() > 1) {
    for (size_t i = 0; i < f.splits().size(); ++i) {
      const auto& s = f.splits()[i];
      std::printf("  split %zu: %s (%llu tensors, data offset %llu)\n", i, s.path.c_str(),
                  static_cast<unsigned long long>(s.n_tensors), static_cast<unsigned long long>(s.data_offset));
    }
  }
  std::printf("\nmetadata (%zu):\n", f.kvs().size());
  for (size_t i = 0; i < f.kvs().size(); ++i) {
    const GgufKV& kv = f.kvs()[i];
    const std::string value = kv.value.to_display(full ? SIZE_MAX : kSummaryItems);
    std::printf("%5zu  %-16s %-40s = %s\n", i, type_label(kv.value).c_str(), kv.key.c_str(), value.c_str());
  }
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::printf("%5s  %-40s %-8s %-24s %12s %12s\n", "idx", "name", "type", "shape", "offset", "bytes");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    std::string offset = std::to_string(t.offset);
    if (f.splits().size() > 1) offset = std::to_string(t.split) + ":" + offset;
    std::printf("%5zu  %-40s %-8s %-24s %12s %12llu\n", i, t.name.c_str(), tensor_type_name(t.type).c_str(),
                shape_text(t).c_str(), offset.c_str(), static_cast<unsigned long long>(t.nbytes));
  }
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  std::string path;
  bool json = false;
  bool full = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (std::strcmp(a, "--json") == 0) {
      json = true;
    } else if (std::strcmp(a, "--full") == 0) {
      full = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      throw Error(std::string("inspect: unknown flag '") + a + "' (run `strix inspect -h`)");
    } else if (path.empty()) {
      path = a;
    } else {
      throw Error("inspect: more than one FILE given ('" + path + "' and '" + a + "')");
    }
  }
  if (path.empty()) {
    usage(stderr);
    return 1;
  }
  const auto file = GgufFile::open(path);
  if (json) {
    print_json(*file, full);
  } else {
    print_text(*file, full);
  }
  return 0;
}

}  // namespace strix::app
