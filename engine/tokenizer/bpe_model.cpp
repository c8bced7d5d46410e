#include "engine/tokenizer/bpe_model.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

using nlohmann::json;

namespace {
const char* const kWhat = "model BPE";
}

BpeModel BpeModel::from_json(const json& m) {
  const json& vocab = field(m, "vocab", kWhat);
  if (!vocab.is_object()) throw Error(std::string(kWhat) + ": \"vocab\" must be an object of token -> id");
  VocabEntries entries;
  entries.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<long long>() < 0 ||
        it.value().get<long long>() > INT32_MAX)
      throw Error(std::string(kWhat) + ": vocab entry \"" + it.key() + "\" must have a non-negative integer id");
    entries.emplace_back(it.key(), it.value().get<TokenId>());
  }
  const json& merges = field(m, "merges", kWhat);
  if (!merges.is_array()) throw Error(std::string(kWhat) + ": \"merges\" must be an array");
  auto source = [&](const MergeVisitor& visit) {
    size_t n = 0;
    for (const auto& mj : merges) {
      const std::string at = std::string(kWhat) + ": merge #" + std::to_string(n++);
      if (mj.is_string()) {
        const std::string& s = mj.get_ref<const std::string&>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw Error(at + " \"" + s + "\" is not \"left right\"");
        visit(std::string_view(s).substr(0, sp), std::string_view(s).substr(sp + 1));
      } else if (mj.is_array() && mj.size() == 2 && mj[0].is_string() && mj[1].is_string()) {
        visit(mj[0].get_ref<const std::string&>(), mj[1].get_ref<const std::string&>());
      } else {
        throw Error(at + " must be \"a b\" or [\"a\", \"b\"]");
      }
    }
  };
  return build(m, std::move(entries), source);
}

BpeModel BpeModel::build(const json& m, VocabEntries vocab, const MergeSource& merges) {
  const std::string what = kWhat;
  BpeModel b;
  TokenId max_id = -1;
  for (const auto& e : vocab) max_id = std::max(max_id, e.second);
  b.id_to_token_.assign(size_t(max_id + 1), std::string());
  std::vector<bool> seen(size_t(max_id + 1), false);
  for (auto& [tok, id] : vocab) {
    if (seen[size_t(id)]) throw Error(what + ": id " + std::to_string(id) + " is given to two vocab entries");
    seen[size_t(id)] = true;
    b.id_to_token_[size_t(id)] = std::move(tok);
  }
  b.vocab_.reserve(vocab.size());
  for (const auto& e : vocab) b.vocab_.insert(b.id_to_token_, e.second);

  b.byte_fallback_ = bool_field(m, "byte_fallback", what, false);
  b.fuse_unk_ = bool_field(m, "fuse_unk", what, false);
  b.ignore_merges_ = bool_field(m, "ignore_merges", what, false);
  b.continuing_subword_prefix_ = string_field(m, "continuing_subword_prefix", what, "");
  b.end_of_word_suffix_ = string_field(m, "end_of_word_suffix", what, "");
  if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0.0)
    throw Error(what + ": dropout is not supported (it makes encoding random)");
  const std::string unk = string_field(m, "unk_token", what, "");
  if (!unk.empty()) {
    const int32_t id = b.vocab_.find(b.id_to_token_, unk);
    if (id >= 0) b.unk_ = id;
  }
  for (int i = 0; i < 256; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", i);
    b.byte_ids_[size_t(i)] = b.vocab_.find(b.id_to_token_, name);
  }

  // Merges are first copied into one arena, then resolved to ids on a few threads (each resolution is
  // three vocab lookups, which dominate loading a large vocabulary), then inserted in rank order.
  struct MergeText {
    size_t left, left_len, right, right_len;
  };
  std::string arena;
  std::vector<MergeText> texts;
  merges([&](std::string_view left, std::string_view right) {
    texts.push_back({arena.size(), left.size(), arena.size() + left.size(), right.size()});
    arena.append(left.data(), left.size());
    arena.append(right.data(), right.size());
  });
  struct Resolved {
    int32_t left, right, result;
  };
  std::vector<Resolved> resolved(texts.size());
  const std::string& prefix = b.continuing_subword_prefix_;
  auto resolve = [&](size_t begin, size_t end) {
    std::string merged;
    for (size_t i = begin; i < end; ++i) {
      const std::string_view left(arena.data() + texts[i].left, texts[i].left_len);
      const std::string_view right(arena.data() + texts[i].right, texts[i].right_len);
      Resolved& r = resolved[i];
      r.left = b.vocab_.find(b.id_to_token_, left);
      r.right = b.vocab_.find(b.id_to_token_, right);
      // The right side of a merge carries the continuation prefix, which the merged token does not repeat.
      merged.assign(left.data(), left.size());
      if (!prefix.empty() && right.substr(0, prefix.size()) == prefix) merged += right.substr(prefix.size());
      else merged += right;
      r.result = b.vocab_.find(b.id_to_token_, merged);
    }
  };
  const size_t workers =
      texts.size() < 50000 ? 1 : std::min<size_t>(4, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  const size_t per = (texts.size() + workers - 1) / workers;
  for (size_t w = 1; w < workers; ++w)
    pool.emplace_back(resolve, std::min(texts.size(), w * per), std::min(texts.size(), (w + 1) * per));
  resolve(0, std::min(texts.size(), per));
  for (auto& t : pool) t.join();

  b.merges_.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const Resolved& r = resolved[i];
    if (r.left < 0 || r.right < 0 || r.result < 0) {
      const std::string left = arena.substr(texts[i].left, texts[i].left_len);
      const std::string right = arena.substr(texts[i].right, texts[i].right_len);
      const std::string at = what + ": merge #" + std::to_string(i);
      if (r.left < 0 || r.right < 0)
        throw Error(at + " (\"" + left + "\", \"" + right + "\") uses a token missing from the vocab");
      throw Error(at + " of \"" + left + "\" and \"" + right + "\" gives a token missing from the vocab");
    }
    // The first occurrence of a pair wins: a later duplicate could never fire first.
    b.merges_.insert(pair_key(r.left, r.right), PairIndex::Value{int32_t(i), r.result});
  }
  return b;
}

void BpeModel::merge_small(std::vector<TokenId>& ids) const {
  // Short words: keep the rank of every adjacent pair in an array and scan it for the minimum. Same
  // order as the heap (lowest rank, then leftmost) without its bookkeeping.
  constexpr int32_t kNone = INT32_MAX;
  int32_t ranks[kSmallWord];
  TokenId results[kSmallWord];
  size_t n = ids.size();
  auto rank_at = [&](size_t i) {
    const PairIndex::Value* v = merges_.find(pair_key(ids[i], ids[i + 1]));
    ranks[i] = v ? v->rank : kNone;
    results[i] = v ? v->result : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) rank_at(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == kNone) break;
    ids[best] = results[best];
    ids.erase(ids.begin() + std::ptrdiff_t(best) + 1);
    // Pairs right of the merged one shift left by one (there are none when it was the last pair).
    if (best + 2 < n - 1) {
      std::copy(ranks + best + 2, ranks + n - 1, ranks + best + 1);
      std::copy(results + best + 2, results + n - 1, results + best + 1);
    }
    --n;
    if (best > 0) rank_at(best - 1);
    if (best + 1 < n) rank_at(best);
  }
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  const int32_t id = vocab_.find(id_to_token_, token);
  if (id < 0) return std::nullopt;
  return id;
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (ignore_merges_ && end_of_word_suffix_.empty()) {
    const int32_t id = vocab_.find(id_to_token_, word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (word.size() <= WordCache::kMaxWordBytes && cache_->lookup(word, out)) return;
  const size_t mark = out.size();
  encode_uncached(word, out);
  cache_->store(word, out.data() + mark, out.size() - mark);
}

void BpeModel::encode_uncached(std::string_view word, std::vector<TokenId>& out) const {
  std::vector<TokenId> ids;
  ids.reserve(word.size());
  bool last_was_unk = false;
  std::string key;
  size_t pos = 0;
  while (pos < word.size()) {
    size_t n = utf8::sequence_length(word, pos);
    if (n == 0) n = 1;
    const bool first = pos == 0, last = pos + n >= word.size();
    int32_t id;
    if ((first || continuing_subword_prefix_.empty()) && (!last || end_of_word_suffix_.empty())) {
      id = vocab_.find(id_to_token_, word.substr(pos, n));
    } else {
      key.clear();
      if (!first) key += continuing_subword_prefix_;
      key.append(word.data() + pos, n);
      if (last) key += end_of_word_suffix_;
      id = vocab_.find(id_to_token_, key);
    }
    if (id >= 0) {
      ids.push_back(id);
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
      } else if (!done) {
        // No unk token: the character is dropped, but it still separates its neighbours (the
        // reference merges around it, never across it).
        ids.push_back(kDropped);
      }
    }
    pos += n;
  }
  merge_symbols(ids);
  for (TokenId id : ids)
    if (id != kDropped) out.push_back(id);
}

void BpeModel::merge_symbols(std::vector<TokenId>& ids) const {
  if (ids.size() < 2) return;
  if (ids.size() <= kSmallWord) {
    merge_small(ids);
    return;
  }
  // Symbols form a doubly linked list; the heap holds candidate merges keyed (rank, position). A popped
  // candidate is applied only if its two symbols are still the ones it was computed for, which makes
  // the order exactly "lowest rank, then leftmost" over the current symbols.
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
    TokenId left, right, result;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Cand> storage;
  storage.reserve(ids.size() * 2);
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap(std::greater<Cand>(), std::move(storage));
  auto consider = [&](int i) {
    if (i < 0 || syms[size_t(i)].next < 0) return;
    const Sym& a = syms[size_t(i)];
    const Sym& b = syms[size_t(a.next)];
    if (const PairIndex::Value* v = merges_.find(pair_key(a.id, b.id)))
      heap.push({v->rank, i, a.id, b.id, v->result});
  };
  for (size_t i = 0; i + 1 < ids.size(); ++i) consider(int(i));
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& a = syms[size_t(c.pos)];
    if (!a.alive || a.id != c.left || a.next < 0) continue;
    Sym& b = syms[size_t(a.next)];
    if (b.id != c.right) continue;
    a.id = c.result;
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
