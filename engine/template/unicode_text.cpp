#include "engine/template/unicode_text.hpp"

namespace strata::jinja {

std::vector<char32_t> utf8_decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) ok = false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (!ok) {
      out.push_back(c);
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::string utf8_encode(const std::vector<char32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) utf8_append(out, cps[i]);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++n;
  return n;
}

bool is_py_word_char(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (c == 0xaa || c == 0xb5 || c == 0xba) return true;
  if (c >= 0xc0 && c <= 0x24f) return c != 0xd7 && c != 0xf7;
  if (c >= 0x250 && c <= 0x2af) return true;                        // IPA
  if (c >= 0x370 && c <= 0x3ff) return c != 0x37e && c != 0x387;   // Greek
  if (c >= 0x400 && c <= 0x52f) return c < 0x482 || c > 0x489;     // Cyrillic
  if (c >= 0x531 && c <= 0x587) return c < 0x55a || c > 0x55f;     // Armenian
  if (c >= 0x5d0 && c <= 0x5f2) return true;                        // Hebrew letters
  if (c >= 0x620 && c <= 0x6ff)                                     // Arabic letters and digits
    return !(c >= 0x66a && c <= 0x66d) && c != 0x6d4 && !(c >= 0x6dd && c <= 0x6de) && c != 0x6e9;
  if (c >= 0x900 && c <= 0xdff) return true;                        // Indic scripts (marks included)
  if (c >= 0xe00 && c <= 0xeff) return c != 0xe3f && c != 0xe4f && c != 0xe5a && c != 0xe5b;  // Thai, Lao
  if (c >= 0x1100 && c <= 0x11ff) return true;                      // Hangul jamo
  if (c >= 0x1e00 && c <= 0x1fff) return true;                      // Latin/Greek extended
  if (c >= 0x3041 && c <= 0x30ff) return c != 0x30a0 && c != 0x30fb;  // kana
  if (c >= 0x3400 && c <= 0x4dbf) return true;                      // CJK extension A
  if (c >= 0x4e00 && c <= 0x9fff) return true;                      // CJK unified ideographs
  if (c >= 0xac00 && c <= 0xd7a3) return true;                      // Hangul syllables
  if (c >= 0xf900 && c <= 0xfaff) return true;                      // CJK compatibility
  if (c >= 0xff10 && c <= 0xff19) return true;                      // fullwidth digits
  if ((c >= 0xff21 && c <= 0xff3a) || (c >= 0xff41 && c <= 0xff5a)) return true;  // fullwidth letters
  if (c >= 0x20000 && c <= 0x3134f) return true;                    // CJK extensions B..G
  return false;
}

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

}  // namespace strata::jinja
