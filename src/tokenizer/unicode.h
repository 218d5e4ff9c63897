// Code point helpers with libllama's exact (lenient) semantics, so that our
// pre-tokenizer sees the same code points and categories as the reference:
//
//  - decoding: a lead byte announces 1..4 bytes (no overlong/surrogate checks);
//    a bad or truncated sequence yields U+FFFD and advances ONE byte;
//  - categories: the Unicode general category (utf8proc) reduced to the classes
//    libllama's regex engine distinguishes (letter, number, punctuation, mark,
//    symbol, whitespace, other);
//  - GPT-2 byte-level mapping: the 256 bytes <-> 256 printable code points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strix::tok {

// Bytes announced by a UTF-8 lead byte, by its high nibble: 0x0-0xB -> 1
// (continuation bytes count as 1), 0xC-0xD -> 2, 0xE -> 3, 0xF -> 4.
size_t utf8_len(char lead);

// Decodes text to code points (lenient, see above). Values above 0x10FFFF can
// come out of a 4-byte sequence; they are kept, like libllama does.
std::vector<uint32_t> decode_utf8_lenient(std::string_view text);

// Decodes one code point at text[i] with the same rules; false (i unchanged)
// when the bytes there are not a complete sequence.
bool decode_utf8_one(std::string_view text, size_t& i, uint32_t& cpt);

// Appends the UTF-8 form of cpt. Throws Error for cpt > 0x10FFFF.
void append_utf8(std::string& out, uint32_t cpt);

// White_Space property (the set libllama's unicode tables use).
bool is_whitespace(uint32_t cpt);

// libllama's "collapsed" byte for a code point: ASCII stays itself; other
// whitespace -> 0x0B; letters 0xD2, numbers 0xD1, punctuation 0xD3, marks 0xD4,
// symbols 0xD5; anything else (controls, format, unassigned, private) 0xD0.
uint8_t collapsed_class(uint32_t cpt);

// General category reduced to libllama's flag classes (WordPiece uses them).
enum class CptCategory { kUndefined, kLetter, kNumber, kPunctuation, kMark, kSymbol, kSeparator, kControl };
CptCategory category(uint32_t cpt);
// Simple lowercase mapping (one code point), and the first code point of the
// canonical decomposition: what libllama's tolower / NFD tables hold.
uint32_t to_lower(uint32_t cpt);
uint32_t nfd_first(uint32_t cpt);

// GPT-2 byte-level encoding: byte -> its code point's UTF-8 text, and back
// (-1 when the code point is not one of the 256).
const std::string& byte_to_unicode(uint8_t byte);
int unicode_to_byte(uint32_t cpt);

}  // namespace strix::tok
