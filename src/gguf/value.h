// The GGUF metadata value model, shared by the reader and the writer.
//
// A value is a scalar of one of the 12 GGUF scalar types, a string, or an array
// whose elements all share one type (arrays may nest). Integers keep their exact
// GGUF type so a file written back out is byte-identical in its metadata.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strix {

// Wire ids, as in the GGUF specification.
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
constexpr uint32_t kGgufTypeCount = 13;

// "uint32", "string", ... ; "unknown" for ids past the table.
const char* gguf_type_name(GgufType type);
// Bytes of one scalar on the wire (0 for STRING and ARRAY).
size_t gguf_scalar_size(GgufType type);
bool gguf_type_valid(uint32_t id);

class GgufValue {
 public:
  GgufValue() = default;

  static GgufValue u8(uint8_t v) { return from_uint(GgufType::UINT8, v); }
  static GgufValue i8(int8_t v) { return from_int(GgufType::INT8, v); }
  static GgufValue u16(uint16_t v) { return from_uint(GgufType::UINT16, v); }
  static GgufValue i16(int16_t v) { return from_int(GgufType::INT16, v); }
  static GgufValue u32(uint32_t v) { return from_uint(GgufType::UINT32, v); }
  static GgufValue i32(int32_t v) { return from_int(GgufType::INT32, v); }
  static GgufValue u64(uint64_t v) { return from_uint(GgufType::UINT64, v); }
  static GgufValue i64(int64_t v) { return from_int(GgufType::INT64, v); }
  static GgufValue f32(float v);
  static GgufValue f64(double v);
  static GgufValue boolean(bool v);
  static GgufValue str(std::string v);
  // An array of `elem_type`; every item must have that type.
  static GgufValue array(GgufType elem_type, std::vector<GgufValue> items);
  // Convenience builders for the common arrays.
  static GgufValue str_array(const std::vector<std::string>& items);
  static GgufValue i32_array(const std::vector<int32_t>& items);
  static GgufValue u32_array(const std::vector<uint32_t>& items);
  static GgufValue f32_array(const std::vector<float>& items);

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::ARRAY; }
  bool is_string() const { return type_ == GgufType::STRING; }
  bool is_integer() const;
  bool is_float() const { return type_ == GgufType::FLOAT32 || type_ == GgufType::FLOAT64; }

  // Typed access; throw Error when the value has another kind (a string asked for
  // as a number, a negative value asked for as unsigned, ...).
  uint64_t as_u64() const;
  int64_t as_i64() const;
  double as_f64() const;  // any integer or float
  bool as_bool() const;
  const std::string& as_string() const;

  // Arrays.
  GgufType elem_type() const { return elem_type_; }
  const std::vector<GgufValue>& items() const { return items_; }
  std::vector<std::string> as_str_array() const;
  std::vector<int64_t> as_i64_array() const;
  std::vector<double> as_f64_array() const;

  // Raw payload for integer types (two's complement bits in 64), float bits
  // for FLOAT32/FLOAT64 stored as the double value.
  uint64_t raw_bits() const { return bits_; }
  double raw_float() const { return f_; }

  // A short human rendering: numbers, quoted strings, arrays summarized past
  // `max_items` elements ("[1, 2, 3, ... 32000 items]").
  std::string to_display(size_t max_items = 8) const;

  bool operator==(const GgufValue& other) const;

 private:
  static GgufValue from_uint(GgufType t, uint64_t v);
  static GgufValue from_int(GgufType t, int64_t v);

  GgufType type_ = GgufType::UINT8;
  uint64_t bits_ = 0;  // integers and bool
  double f_ = 0.0;     // floats
  std::string s_;
  GgufType elem_type_ = GgufType::UINT8;
  std::vector<GgufValue> items_;
};

struct GgufKV {
  std::string key;
  GgufValue value;
};

}  // namespace strix
