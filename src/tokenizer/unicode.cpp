#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>

#include "core/error.h"

namespace strix::tok {

size_t utf8_len(char lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[static_cast<uint8_t>(lead) >> 4];
}

namespace {

bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

// One code point at text[i]; returns false (and leaves i) on a bad sequence.
bool decode_one(std::string_view text, size_t& i, uint32_t& cpt) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const size_t n = text.size();
  const uint8_t b0 = b(0);
  if ((b0 & 0x80) == 0) {
    cpt = b0;
    i += 1;
    return true;
  }
  if ((b0 & 0x40) == 0) return false;  // a stray continuation byte
  if ((b0 & 0x20) == 0) {
    if (i + 1 >= n || !is_cont(b(1))) return false;
    cpt = (uint32_t(b0 & 0x1F) << 6) | (b(1) & 0x3F);
    i += 2;
    return true;
  }
  if ((b0 & 0x10) == 0) {
    if (i + 2 >= n || !is_cont(b(1)) || !is_cont(b(2))) return false;
    cpt = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    i += 3;
    return true;
  }
  if ((b0 & 0x08) == 0) {
    if (i + 3 >= n || !is_cont(b(1)) || !is_cont(b(2)) || !is_cont(b(3))) return false;
    cpt = (uint32_t(b0 & 0x07) << 18) | (uint32_t(b(1) & 0x3F) << 12) | (uint32_t(b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    i += 4;
    return true;
  }
  return false;
}

}  // namespace

bool decode_utf8_one(std::string_view text, size_t& i, uint32_t& cpt) { return decode_one(text, i, cpt); }

std::vector<uint32_t> decode_utf8_lenient(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cpt = 0;
    if (decode_one(text, i, cpt)) {
      out.push_back(cpt);
    } else {
      out.push_back(0xFFFD);
      ++i;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    throw Error("tokenizer: code point " + std::to_string(cpt) + " is beyond U+10FFFF");
  }
}

bool is_whitespace(uint32_t cpt) {
  if (cpt < 0x80) return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20;
  switch (cpt) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cpt >= 0x2000 && cpt <= 0x200A;
  }
}

uint8_t collapsed_class(uint32_t cpt) {
  if (cpt < 0x80) return static_cast<uint8_t>(cpt);
  if (is_whitespace(cpt)) return 0x0B;
  if (cpt > 0x10FFFF) return 0xD0;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cpt))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return 0xD2;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return 0xD1;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return 0xD3;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return 0xD4;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      return 0xD5;
    default:
      return 0xD0;
  }
}

CptCategory category(uint32_t cpt) {
  if (cpt > 0x10FFFF) return CptCategory::kUndefined;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cpt))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CptCategory::kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CptCategory::kNumber;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return CptCategory::kPunctuation;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return CptCategory::kMark;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      return CptCategory::kSymbol;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return CptCategory::kSeparator;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      return CptCategory::kControl;
    default:
      return CptCategory::kUndefined;
  }
}

uint32_t to_lower(uint32_t cpt) {
  if (cpt > 0x10FFFF) return cpt;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cpt)));
}

uint32_t nfd_first(uint32_t cpt) {
  if (cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return cpt;
  utf8proc_int32_t buf[8];
  int last = 0;
  const utf8proc_ssize_t n =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cpt), buf, 8, UTF8PROC_DECOMPOSE, &last);
  return n >= 1 ? static_cast<uint32_t>(buf[0]) : cpt;
}

namespace {

// The GPT-2 table: printable Latin-1 bytes map to themselves, the other 68
// bytes (controls, space, 0x7F-0xA0, 0xAD) to U+0100.. in byte order.
struct ByteTable {
  std::array<std::string, 256> to_text;
  std::array<int, 512> from_cpt;  // cpt < 512 -> byte or -1
  ByteTable() {
    from_cpt.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cpt = printable ? uint32_t(b) : next++;
      append_utf8(to_text[b], cpt);
      from_cpt[cpt] = b;
    }
  }
};

const ByteTable& byte_table() {
  static const ByteTable table;
  return table;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return byte_table().to_text[byte]; }

int unicode_to_byte(uint32_t cpt) { return cpt < 512 ? byte_table().from_cpt[cpt] : -1; }

}  // namespace strix::tok
