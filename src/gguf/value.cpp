#include "gguf/value.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace strix {

namespace {
const char* const kTypeNames[kGgufTypeCount] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                                "bool",  "string", "array",  "uint64", "int64",  "float64"};
const size_t kScalarSizes[kGgufTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

bool is_signed(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}
}  // namespace

const char* gguf_type_name(GgufType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kGgufTypeCount ? kTypeNames[id] : "unknown";
}

size_t gguf_scalar_size(GgufType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kGgufTypeCount ? kScalarSizes[id] : 0;
}

bool gguf_type_valid(uint32_t id) { return id < kGgufTypeCount; }

GgufValue GgufValue::from_uint(GgufType t, uint64_t v) {
  GgufValue r;
  r.type_ = t;
  r.bits_ = v;
  return r;
}

GgufValue GgufValue::from_int(GgufType t, int64_t v) {
  GgufValue r;
  r.type_ = t;
  r.bits_ = static_cast<uint64_t>(v);
  return r;
}

GgufValue GgufValue::f32(float v) {
  GgufValue r;
  r.type_ = GgufType::FLOAT32;
  r.f_ = v;
  // The exact bits too: a float -> double -> float trip does not keep every NaN.
  r.bits_ = std::bit_cast<uint32_t>(v);
  return r;
}

GgufValue GgufValue::f64(double v) {
  GgufValue r;
  r.type_ = GgufType::FLOAT64;
  r.f_ = v;
  r.bits_ = std::bit_cast<uint64_t>(v);
  return r;
}

GgufValue GgufValue::boolean(bool v) {
  GgufValue r;
  r.type_ = GgufType::BOOL;
  r.bits_ = v ? 1 : 0;
  return r;
}

GgufValue GgufValue::str(std::string v) {
  GgufValue r;
  r.type_ = GgufType::STRING;
  r.s_ = std::move(v);
  return r;
}

GgufValue GgufValue::array(GgufType elem_type, std::vector<GgufValue> items) {
  if (!gguf_type_valid(static_cast<uint32_t>(elem_type))) {
    throw Error("GGUF array of invalid element type " + std::to_string(static_cast<uint32_t>(elem_type)));
  }
  for (const auto& it : items) {
    if (it.type() != elem_type) {
      throw Error(std::string("GGUF array of ") + gguf_type_name(elem_type) + " given an item of type " +
                  gguf_type_name(it.type()));
    }
  }
  GgufValue r;
  r.type_ = GgufType::ARRAY;
  r.elem_type_ = elem_type;
  r.items_ = std::move(items);
  return r;
}

GgufValue GgufValue::str_array(const std::vector<std::string>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(str(s));
  return array(GgufType::STRING, std::move(v));
}

GgufValue GgufValue::i32_array(const std::vector<int32_t>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (auto x : items) v.push_back(i32(x));
  return array(GgufType::INT32, std::move(v));
}

GgufValue GgufValue::u32_array(const std::vector<uint32_t>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (auto x : items) v.push_back(u32(x));
  return array(GgufType::UINT32, std::move(v));
}

GgufValue GgufValue::f32_array(const std::vector<float>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (auto x : items) v.push_back(f32(x));
  return array(GgufType::FLOAT32, std::move(v));
}

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::UINT16:
    case GgufType::INT16:
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::UINT64:
    case GgufType::INT64:
      return true;
    default:
      return false;
  }
}

static int64_t sign_extend(GgufType t, uint64_t bits) {
  switch (t) {
    case GgufType::INT8:
      return static_cast<int8_t>(bits);
    case GgufType::INT16:
      return static_cast<int16_t>(bits);
    case GgufType::INT32:
      return static_cast<int32_t>(bits);
    default:
      return static_cast<int64_t>(bits);
  }
}

uint64_t GgufValue::as_u64() const {
  if (type_ == GgufType::BOOL) return bits_;
  if (!is_integer()) throw Error(std::string("expected an integer, found ") + gguf_type_name(type_));
  if (is_signed(type_)) {
    const int64_t v = sign_extend(type_, bits_);
    if (v < 0) throw Error("expected a non-negative integer, found " + std::to_string(v));
    return static_cast<uint64_t>(v);
  }
  return bits_;
}

int64_t GgufValue::as_i64() const {
  if (type_ == GgufType::BOOL) return static_cast<int64_t>(bits_);
  if (!is_integer()) throw Error(std::string("expected an integer, found ") + gguf_type_name(type_));
  if (is_signed(type_)) return sign_extend(type_, bits_);
  if (bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw Error("integer " + std::to_string(bits_) + " does not fit in int64");
  }
  return static_cast<int64_t>(bits_);
}

double GgufValue::as_f64() const {
  if (is_float()) return f_;
  if (is_integer())
    return is_signed(type_) ? static_cast<double>(sign_extend(type_, bits_)) : static_cast<double>(bits_);
  throw Error(std::string("expected a number, found ") + gguf_type_name(type_));
}

bool GgufValue::as_bool() const {
  if (type_ != GgufType::BOOL) throw Error(std::string("expected a bool, found ") + gguf_type_name(type_));
  return bits_ != 0;
}

const std::string& GgufValue::as_string() const {
  if (type_ != GgufType::STRING) throw Error(std::string("expected a string, found ") + gguf_type_name(type_));
  return s_;
}

std::vector<std::string> GgufValue::as_str_array() const {
  if (type_ != GgufType::ARRAY || elem_type_ != GgufType::STRING) {
    throw Error("expected an array of strings");
  }
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& it : items_) out.push_back(it.s_);
  return out;
}

std::vector<int64_t> GgufValue::as_i64_array() const {
  if (type_ != GgufType::ARRAY) throw Error("expected an array of integers");
  std::vector<int64_t> out;
  out.reserve(items_.size());
  for (const auto& it : items_) out.push_back(it.as_i64());
  return out;
}

std::vector<double> GgufValue::as_f64_array() const {
  if (type_ != GgufType::ARRAY) throw Error("expected an array of numbers");
  std::vector<double> out;
  out.reserve(items_.size());
  for (const auto& it : items_) out.push_back(it.as_f64());
  return out;
}

static std::string quote(const std::string& s, size_t max_len) {
  std::string out = "\"";
  size_t n = 0;
  for (unsigned char c : s) {
    if (n++ >= max_len) {
      out += "...";
      break;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string GgufValue::to_display(size_t max_items) const {
  switch (type_) {
    case GgufType::STRING:
      return quote(s_, 120);
    case GgufType::BOOL:
      return bits_ ? "true" : "false";
    case GgufType::FLOAT32:
    case GgufType::FLOAT64: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", f_);
      return buf;
    }
    case GgufType::ARRAY: {
      std::string out = "[";
      const size_t n = items_.size();
      for (size_t i = 0; i < n && i < max_items; ++i) {
        if (i) out += ", ";
        out += items_[i].to_display(max_items);
      }
      if (n > max_items) out += std::string(max_items > 0 ? ", " : "") + "... " + std::to_string(n) + " items";
      return out + "]";
    }
    default:
      return is_signed(type_) ? std::to_string(sign_extend(type_, bits_)) : std::to_string(bits_);
  }
}

bool GgufValue::operator==(const GgufValue& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case GgufType::STRING:
      return s_ == o.s_;
    case GgufType::FLOAT32:
    case GgufType::FLOAT64:
      return (std::isnan(f_) && std::isnan(o.f_)) || f_ == o.f_;
    case GgufType::ARRAY:
      return elem_type_ == o.elem_type_ && items_ == o.items_;
    default:
      return bits_ == o.bits_;
  }
}

}  // namespace strix
