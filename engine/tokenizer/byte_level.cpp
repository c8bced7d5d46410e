#include "engine/tokenizer/byte_level.hpp"

#include <array>

#include "engine/tokenizer/utf8.hpp"

namespace strata::byte_level {

namespace {

struct Alphabet {
  std::array<char32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cp{};  // every alphabet code point is < 0x144
  Alphabet() {
    from_cp.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? char32_t(b) : next++;
      from_cp[to_cp[b]] = int16_t(b);
      utf8::append(to_utf8[b], to_cp[b]);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t byte_to_code_point(uint8_t b) { return alphabet().to_cp[b]; }

int code_point_to_byte(char32_t cp) { return cp < 512 ? alphabet().from_cp[cp] : -1; }

void encode_append(std::string& out, std::string_view bytes) {
  const auto& a = alphabet();
  for (unsigned char b : bytes) out += a.to_utf8[b];
}

}  // namespace strata::byte_level
