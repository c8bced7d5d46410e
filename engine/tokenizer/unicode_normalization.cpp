#include "engine/tokenizer/unicode_normalization.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/unicode_normalization_data.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata::unicode {

namespace {

namespace ud = unicode_data;

// Hangul syllables are computed, not tabled (UAX #15 / Unicode 3.12).
constexpr char32_t SBase = 0xAC00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11A7;
constexpr int LCount = 19, VCount = 21, TCount = 28, NCount = VCount * TCount, SCount = LCount * NCount;

uint32_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = ud::kCombiningClass + ud::kCombiningClassSize;
  const auto* it = std::lower_bound(ud::kCombiningClass, end, cp,
                                    [](const ud::CodePointValue& v, char32_t c) { return v.cp < c; });
  return (it != end && it->cp == cp) ? it->value : 0;
}

void decompose_into(std::vector<char32_t>& out, char32_t cp, bool compat) {
  if (cp < 0xA0) {
    out.push_back(cp);
    return;
  }
  if (cp >= SBase && cp < SBase + SCount) {
    const int s = int(cp - SBase);
    out.push_back(LBase + s / NCount);
    out.push_back(VBase + (s % NCount) / TCount);
    if (s % TCount) out.push_back(TBase + s % TCount);
    return;
  }
  const ud::Decomposition* table = compat ? ud::kCompatibility : ud::kCanonical;
  const size_t size = compat ? ud::kCompatibilitySize : ud::kCanonicalSize;
  const char32_t* data = compat ? ud::kCompatibilityData : ud::kCanonicalData;
  const auto* end = table + size;
  const auto* it =
      std::lower_bound(table, end, cp, [](const ud::Decomposition& d, char32_t c) { return d.cp < c; });
  if (it != end && it->cp == cp) {
    out.insert(out.end(), data + it->offset, data + it->offset + it->length);
  } else {
    out.push_back(cp);
  }
}

// Stable sort of each run of non-starters by combining class (the canonical ordering algorithm).
void canonical_order(std::vector<char32_t>& cps) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
}

const std::unordered_map<uint64_t, char32_t>& compositions() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<uint64_t, char32_t>();
    m->reserve(ud::kCompositionsSize);
    for (size_t i = 0; i < ud::kCompositionsSize; ++i) {
      const auto& c = ud::kCompositions[i];
      (*m)[(uint64_t(c.first) << 32) | c.second] = c.composite;
    }
    return m;
  }();
  return *map;
}

bool compose_pair(char32_t a, char32_t b, char32_t& out) {
  if (a >= LBase && a < LBase + LCount && b >= VBase && b < VBase + VCount) {
    out = SBase + ((a - LBase) * VCount + (b - VBase)) * TCount;
    return true;
  }
  if (a >= SBase && a < SBase + SCount && (a - SBase) % TCount == 0 && b > TBase && b < TBase + TCount) {
    out = a + (b - TBase);
    return true;
  }
  const auto& m = compositions();
  auto it = m.find((uint64_t(a) << 32) | b);
  if (it == m.end()) return false;
  out = it->second;
  return true;
}

// The canonical composition algorithm: a character joins the last starter unless a character between
// them blocks it (same or higher class, or a starter).
void compose(std::vector<char32_t>& cps) {
  if (cps.empty()) return;
  size_t starter = 0;
  bool have_starter = combining_class(cps[0]) == 0;
  uint32_t last_class = have_starter ? 0 : 256;
  size_t w = 1;
  for (size_t r = 1; r < cps.size(); ++r) {
    const char32_t c = cps[r];
    const uint32_t cc = combining_class(c);
    char32_t composite;
    const bool blocked = w - 1 != starter && (last_class == 0 || last_class >= cc);
    if (have_starter && !blocked && compose_pair(cps[starter], c, composite)) {
      cps[starter] = composite;
      continue;
    }
    if (cc == 0) {
      starter = w;
      have_starter = true;
    }
    last_class = cc;
    cps[w++] = c;
  }
  cps.resize(w);
}

// True when no code point of the text can change under the composed form (the generated "unsafe"
// set holds every non-starter, second half of a composition, and code point the form remaps).
bool already_composed(std::string_view text, bool compat) {
  const ud::CodePointRange* table = compat ? ud::kNfkcUnsafe : ud::kNfcUnsafe;
  const size_t size = compat ? ud::kNfkcUnsafeSize : ud::kNfcUnsafeSize;
  const char32_t lowest = table[0].first;
  // Most code points sit in long runs without any unsafe one (CJK, Hangul syllables): remember the
  // safe gap the last lookup landed in and skip the search while text stays inside it.
  char32_t gap_lo = 0, gap_hi = lowest - 1;
  bool stable = true;
  utf8::for_each_code_point(text, [&](char32_t cp, size_t, size_t) {
    if (!stable || (cp >= gap_lo && cp <= gap_hi)) return;
    const auto* end = table + size;
    const auto* it = std::upper_bound(table, end, cp, [](char32_t c, const ud::CodePointRange& r) { return c < r.first; });
    if (it != table && (it - 1)->last >= cp) {
      stable = false;
      return;
    }
    gap_lo = it == table ? 0 : (it - 1)->last + 1;
    gap_hi = it == end ? 0x10FFFF : it->first - 1;
  });
  return stable;
}

}  // namespace

std::string normalize(std::string_view text, Form form) {
  // ASCII is invariant under every form; most tokenizer input is mostly ASCII.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(text);
  const bool compat = form == Form::NFKC || form == Form::NFKD;
  if ((form == Form::NFC || form == Form::NFKC) && already_composed(text, compat)) return std::string(text);
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  utf8::for_each_code_point(text, [&](char32_t cp, size_t, size_t) { decompose_into(cps, cp, compat); });
  canonical_order(cps);
  if (form == Form::NFC || form == Form::NFKC) compose(cps);
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : cps) utf8::append(out, cp);
  return out;
}

}  // namespace strata::unicode
