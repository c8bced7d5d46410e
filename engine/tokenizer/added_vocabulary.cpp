#include "engine/tokenizer/added_vocabulary.hpp"

#include "engine/tokenizer/unicode_whitespace.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

namespace {

// The code point ending just before `pos` (text is valid UTF-8).
char32_t code_point_before(std::string_view text, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  size_t n = utf8::sequence_length(text, start);
  return n ? utf8::decode_at(text, start, n) : utf8::kReplacement;
}

char32_t code_point_at(std::string_view text, size_t pos) {
  size_t n = utf8::sequence_length(text, pos);
  return n ? utf8::decode_at(text, pos, n) : utf8::kReplacement;
}

// A word character for single_word: letters, digits, underscore. Non-ASCII code points count as word
// characters unless they are whitespace, which keeps "word" a script-neutral notion.
bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return !is_unicode_whitespace(c);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<std::string> patterns, std::vector<const AddedToken*> tokens)
    : patterns_(std::move(patterns)), tokens_(std::move(tokens)) {
  trie_.emplace_back();
  for (size_t i = 0; i < patterns_.size(); ++i) {
    if (patterns_[i].empty()) continue;  // an empty token can never be found in text
    starts_[static_cast<unsigned char>(patterns_[i][0])] = true;
    int node = 0;
    for (unsigned char c : patterns_[i]) {
      auto it = trie_[size_t(node)].next.find(c);
      if (it == trie_[size_t(node)].next.end()) {
        trie_.emplace_back();
        const int created = int(trie_.size()) - 1;
        trie_[size_t(node)].next.emplace(c, created);
        node = created;
      } else {
        node = it->second;
      }
    }
    if (trie_[size_t(node)].match < 0) trie_[size_t(node)].match = int(i);
  }
}

std::vector<Segment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!starts_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    int node = 0, best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < text.size(); ++j) {
      auto it = trie_[size_t(node)].next.find(static_cast<unsigned char>(text[j]));
      if (it == trie_[size_t(node)].next.end()) break;
      node = it->second;
      if (trie_[size_t(node)].match >= 0) {
        best = trie_[size_t(node)].match;
        best_end = j + 1;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = *tokens_[size_t(best)];
    if (tok.single_word) {
      const bool word_before = i > 0 && is_word_char(code_point_before(text, i));
      const bool word_after = best_end < text.size() && is_word_char(code_point_at(text, best_end));
      if (word_before || word_after) {
        ++i;
        continue;
      }
    }
    size_t start = i, end = best_end;
    if (tok.lstrip)
      while (start > plain_start && is_unicode_whitespace(code_point_before(text, start))) {
        size_t k = start - 1;
        while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
        start = k;
      }
    if (tok.rstrip)
      while (end < text.size() && is_unicode_whitespace(code_point_at(text, end))) end += utf8::sequence_length(text, end);
    if (start > plain_start) out.push_back({plain_start, start, -1});
    out.push_back({start, end, tok.id});
    plain_start = end;
    i = end;
  }
  if (plain_start < text.size()) out.push_back({plain_start, text.size(), -1});
  return out;
}

}  // namespace strata
