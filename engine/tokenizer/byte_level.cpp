#include "engine/tokenizer/byte_level.hpp"

#include <array>

#include "engine/tokenizer/utf8.hpp"

namespace strata::byte_level {

namespace {

struct Alphabet {
  std::array<char32_t, 256> to_cp{};
  std::array<std::array<char, 2>, 256> to_utf8{};  // every alphabet code point is < U+0800: 1-2 bytes
  std::array<uint8_t, 256> utf8_len{};
  std::array<int16_t, 512> from_cp{};  // every alphabet code point is < 0x144
  Alphabet() {
    from_cp.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? char32_t(b) : next++;
      from_cp[to_cp[b]] = int16_t(b);
      std::string enc;
      utf8::append(enc, to_cp[b]);
      utf8_len[b] = uint8_t(enc.size());
      for (size_t k = 0; k < enc.size(); ++k) to_utf8[b][k] = enc[k];
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
  const size_t start = out.size();
  out.resize(start + bytes.size() * 2);
  char* w = out.data() + start;
  for (unsigned char b : bytes) {
    w[0] = a.to_utf8[b][0];
    w[1] = a.to_utf8[b][1];
    w += a.utf8_len[b];
  }
  out.resize(size_t(w - out.data()));
}

}  // namespace strata::byte_level
