#include "engine/tokenizer/bpe_model.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

using nlohmann::json;

BpeModel BpeModel::from_json(const json& m) {
  const std::string what = "model BPE";
  BpeModel b;
  const json& vocab = field(m, "vocab", what);
  if (!vocab.is_object()) throw Error(what + ": \"vocab\" must be an object of token -> id");
  b.vocab_.reserve(vocab.size() * 2);
  TokenId max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<long long>() < 0 ||
        it.value().get<long long>() > INT32_MAX)
      throw Error(what + ": vocab entry \"" + it.key() + "\" must have a non-negative integer id");
    const TokenId id = it.value().get<TokenId>();
    b.vocab_.emplace(it.key(), id);
    max_id = std::max(max_id, id);
  }
  b.id_to_token_.assign(size_t(max_id + 1), std::string());
  for (const auto& [tok, id] : b.vocab_) b.id_to_token_[size_t(id)] = tok;

  b.byte_fallback_ = bool_field(m, "byte_fallback", what, false);
  b.fuse_unk_ = bool_field(m, "fuse_unk", what, false);
  b.ignore_merges_ = bool_field(m, "ignore_merges", what, false);
  b.continuing_subword_prefix_ = string_field(m, "continuing_subword_prefix", what, "");
  b.end_of_word_suffix_ = string_field(m, "end_of_word_suffix", what, "");
  if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].is_number() &&
      m["dropout"].get<double>() > 0.0)
    throw Error(what + ": dropout is not supported (it makes encoding random)");
  const std::string unk = string_field(m, "unk_token", what, "");
  if (!unk.empty()) {
    auto it = b.vocab_.find(unk);
    if (it != b.vocab_.end()) b.unk_ = it->second;
  }
  for (int i = 0; i < 256; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", i);
    auto it = b.vocab_.find(name);
    b.byte_ids_[size_t(i)] = it == b.vocab_.end() ? -1 : it->second;
  }

  const json& merges = field(m, "merges", what);
  if (!merges.is_array()) throw Error(what + ": \"merges\" must be an array");
  b.merges_.reserve(merges.size() * 2);
  const size_t prefix_len = b.continuing_subword_prefix_.size();
  int32_t rank = 0;
  for (const auto& mj : merges) {
    std::string left, right;
    if (mj.is_string()) {
      const std::string& s = mj.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        throw Error(what + ": merge #" + std::to_string(rank) + " \"" + s + "\" is not \"left right\"");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (mj.is_array() && mj.size() == 2 && mj[0].is_string() && mj[1].is_string()) {
      left = mj[0].get<std::string>();
      right = mj[1].get<std::string>();
    } else {
      throw Error(what + ": merge #" + std::to_string(rank) + " must be \"a b\" or [\"a\", \"b\"]");
    }
    auto l = b.vocab_.find(left), r = b.vocab_.find(right);
    if (l == b.vocab_.end() || r == b.vocab_.end())
      throw Error(what + ": merge #" + std::to_string(rank) + " (\"" + left + "\", \"" + right +
                  "\") uses a token missing from the vocab");
    // The right side of a merge carries the continuation prefix, which the merged token does not repeat.
    std::string merged = left + (prefix_len && right.compare(0, prefix_len, b.continuing_subword_prefix_) == 0
                                     ? right.substr(prefix_len)
                                     : right);
    auto res = b.vocab_.find(merged);
    if (res == b.vocab_.end())
      throw Error(what + ": merge #" + std::to_string(rank) + " gives \"" + merged + "\", missing from the vocab");
    // The first occurrence of a pair wins, as a later duplicate could never fire first.
    b.merges_.emplace(pair_key(l->second, r->second), Merge{rank, res->second});
    ++rank;
  }
  return b;
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (ignore_merges_ && end_of_word_suffix_.empty()) {
    auto it = vocab_.find(std::string(word));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<TokenId> ids;
  ids.reserve(word.size());
  bool last_was_unk = false;
  std::string key;
  size_t pos = 0;
  while (pos < word.size()) {
    size_t n = utf8::sequence_length(word, pos);
    if (n == 0) n = 1;
    const bool first = pos == 0, last = pos + n >= word.size();
    key.clear();
    if (!first) key += continuing_subword_prefix_;
    key.append(word.data() + pos, n);
    if (last) key += end_of_word_suffix_;
    auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      last_was_unk = false;
    } else {
      bool done = false;
      if (byte_fallback_) {
        done = true;
        for (size_t k = 0; k < n; ++k)
          if (byte_ids_[static_cast<unsigned char>(word[pos + k])] < 0) done = false;
        if (done) {
          for (size_t k = 0; k < n; ++k) ids.push_back(byte_ids_[static_cast<unsigned char>(word[pos + k])]);
          last_was_unk = false;
        }
      }
      if (!done && unk_) {
        if (!(fuse_unk_ && last_was_unk)) ids.push_back(*unk_);
        last_was_unk = true;
      }
    }
    pos += n;
  }
  merge_symbols(ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

void BpeModel::merge_symbols(std::vector<TokenId>& ids) const {
  if (ids.size() < 2) return;
  // Symbols form a doubly linked list; the heap holds candidate merges keyed (rank, position). A popped
  // candidate is applied only if its two symbols are still the ones it was computed for.
  struct Sym {
    TokenId id;
    int prev, next;
    bool alive;
  };
  std::vector<Sym> syms(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) syms[i] = {ids[i], int(i) - 1, i + 1 < ids.size() ? int(i) + 1 : -1, true};
  struct Cand {
    int32_t rank;
    int pos;
    TokenId left, right;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Cand> storage;
  storage.reserve(ids.size());
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap(std::greater<Cand>(), std::move(storage));
  auto consider = [&](int i) {
    if (i < 0 || syms[size_t(i)].next < 0) return;
    const Sym& a = syms[size_t(i)];
    const Sym& b = syms[size_t(a.next)];
    auto it = merges_.find(pair_key(a.id, b.id));
    if (it != merges_.end()) heap.push({it->second.rank, i, a.id, b.id});
  };
  for (size_t i = 0; i + 1 < ids.size(); ++i) consider(int(i));
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& a = syms[size_t(c.pos)];
    if (!a.alive || a.id != c.left || a.next < 0) continue;
    Sym& b = syms[size_t(a.next)];
    if (b.id != c.right) continue;
    a.id = merges_.at(pair_key(c.left, c.right)).result;
    b.alive = false;
    a.next = b.next;
    if (b.next >= 0) syms[size_t(b.next)].prev = c.pos;
    consider(a.prev);
    consider(c.pos);
  }
  ids.clear();
  for (int i = 0; i >= 0; i = syms[size_t(i)].next) ids.push_back(syms[size_t(i)].id);
}

}  // namespace strata
