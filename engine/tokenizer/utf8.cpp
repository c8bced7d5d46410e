#include "engine/tokenizer/utf8.hpp"

namespace strata::utf8 {

namespace {

// What a lead byte allows, per Unicode Table 3-7: the sequence length and the range of the second byte
// (narrowed for E0/ED/F0/F4 so that overlongs, surrogates and code points past U+10FFFF are excluded).
// Returns false for a byte that cannot start a multi-byte sequence.
bool lead_byte_rule(unsigned char b0, size_t& n, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

}  // namespace

size_t sequence_length(std::string_view s, size_t pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + pos;
  const size_t left = s.size() - pos;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo, hi;
  if (!lead_byte_rule(b0, n, lo, hi)) return 0;
  if (left < n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((p[k] & 0xC0) != 0x80) return 0;
  return n;
}

char32_t decode_at(std::string_view s, size_t pos, size_t len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + pos;
  switch (len) {
    case 1: return p[0];
    case 2: return (char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3: return (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
      return (char32_t(p[0] & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) |
             (p[3] & 0x3F);
  }
}

std::optional<size_t> first_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

// Length of the longest prefix at pos that could still start a well-formed sequence (a "maximal
// subpart"): that whole prefix becomes one U+FFFD.
static size_t maximal_subpart(std::string_view s, size_t pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + pos;
  const size_t left = s.size() - pos;
  const unsigned char b0 = p[0];
  size_t n;
  unsigned char lo, hi;
  if (!lead_byte_rule(b0, n, lo, hi)) return 1;
  size_t k = 1;
  if (k < left && p[k] >= lo && p[k] <= hi) {
    ++k;
    while (k < n && k < left && (p[k] & 0xC0) == 0x80) ++k;
  }
  return k;
}

std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t n = sequence_length(s, i);
    if (n) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      append(out, kReplacement);
      i += maximal_subpart(s, i);
    }
  }
  return out;
}

}  // namespace strata::utf8
