// Unicode normalization tables, generated (see tools/tokenizer/gen_unicode_normalization.py). Every
// table is sorted by code point so lookups are binary searches.
#pragma once
#include <cstddef>
#include <cstdint>

namespace strata::unicode_data {

struct CodePointValue {
  char32_t cp;
  uint32_t value;
};
struct Decomposition {
  char32_t cp;
  uint32_t offset;  // into the matching *Data array
  uint32_t length;
};
struct CodePointRange {
  char32_t first, last;  // inclusive
};
struct Composition {
  char32_t first, second, composite;
};

extern const char* const kUnicodeVersion;
extern const CodePointValue kCombiningClass[];
extern const size_t kCombiningClassSize;
extern const char32_t kCanonicalData[];
extern const Decomposition kCanonical[];  // full NFD expansion
extern const size_t kCanonicalSize;
extern const char32_t kCompatibilityData[];
extern const Decomposition kCompatibility[];  // full NFKD expansion
extern const size_t kCompatibilitySize;
extern const Composition kCompositions[];  // primary composites only
extern const size_t kCompositionsSize;
// Code points (>= U+0080) whose presence may make text change under NFC / NFKC (see the generator).
extern const CodePointRange kNfcUnsafe[];
extern const size_t kNfcUnsafeSize;
extern const CodePointRange kNfkcUnsafe[];
extern const size_t kNfkcUnsafeSize;

}  // namespace strata::unicode_data
