#include "engine/tokenizer/tokenizer.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.hpp"
#include "engine/tokenizer/json_scan.hpp"
#include "engine/tokenizer/tokenizer_impl.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

using nlohmann::json;

namespace {

std::vector<AddedToken> parse_added_tokens(const json& root) {
  std::vector<AddedToken> out;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return out;
  if (!it->is_array()) throw Error("tokenizer.json: \"added_tokens\" must be an array");
  for (const auto& t : *it) {
    const std::string what = "added_tokens[" + std::to_string(out.size()) + "]";
    AddedToken a;
    const long long id = int_field(t, "id", what, -1);
    if (id < 0 || id > INT32_MAX) throw Error(what + ": \"id\" must be a non-negative integer");
    a.id = TokenId(id);
    a.content = string_field(t, "content", what);
    if (utf8::first_invalid(a.content)) throw Error(what + ": content is not valid UTF-8");
    a.special = bool_field(t, "special", what, false);
    a.lstrip = bool_field(t, "lstrip", what, false);
    a.rstrip = bool_field(t, "rstrip", what, false);
    a.single_word = bool_field(t, "single_word", what, false);
    a.normalized = bool_field(t, "normalized", what, !a.special);
    out.push_back(std::move(a));
  }
  return out;
}

// Parses the document, reading model.vocab and model.merges with the fast scanner when the file has
// the usual shape (their DOM would dominate load time); anything unusual takes the full-DOM path,
// whose errors are the precise ones.
json parse_document(const std::string& text, BpeModel::VocabEntries* vocab, std::string_view* merges,
                    bool* scanned) {
  *scanned = false;
  if (auto spans = json_scan::find_model_spans(text); spans && spans->vocab.found && spans->merges.found) {
    const auto& v = spans->vocab;
    const auto& m = spans->merges;
    // Replace both values by empty containers, later span first so earlier offsets stay valid.
    std::string rest = text;
    const bool vocab_first = v.begin < m.begin;
    const auto& later = vocab_first ? m : v;
    const auto& earlier = vocab_first ? v : m;
    rest.replace(later.begin, later.end - later.begin, &later == &v ? "{}" : "[]");
    rest.replace(earlier.begin, earlier.end - earlier.begin, &earlier == &v ? "{}" : "[]");
    json root;
    try {
      root = json::parse(rest);
    } catch (const json::parse_error&) {
      return json::parse(text);  // let the full parse report where the document is broken
    }
    *vocab = json_scan::parse_vocab(std::string_view(text).substr(v.begin, v.end - v.begin));
    *merges = std::string_view(text).substr(m.begin, m.end - m.begin);
    *scanned = true;
    return root;
  }
  return json::parse(text);
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::from_json_text(const std::string& text) {
  json root;
  BpeModel::VocabEntries vocab;
  std::string_view merges;
  bool scanned = false;
  try {
    root = parse_document(text, &vocab, &merges, &scanned);
  } catch (const json::parse_error& e) {
    throw Error(std::string("tokenizer.json: invalid JSON: ") + e.what());
  }
  if (!root.is_object()) throw Error("tokenizer.json: top level must be an object");
  auto impl = std::make_unique<Impl>();
  const json null_json;
  auto part = [&](const char* key) -> const json& {
    auto it = root.find(key);
    return it == root.end() ? null_json : *it;
  };
  impl->normalizer = make_normalizer(part("normalizer"));
  impl->pre_tokenizer = make_pre_tokenizer(part("pre_tokenizer"));
  impl->post_processor = make_post_processor(part("post_processor"));
  impl->decoder = make_decoder(part("decoder"));
  const json& model = part("model");
  if (!model.is_object()) throw Error("tokenizer.json: missing \"model\" object");
  const std::string model_type = string_field(model, "type", "model", "BPE");
  if (model_type != "BPE") throw Error("tokenizer.json: unsupported model type \"" + model_type + "\"");
  impl->model = scanned ? BpeModel::build(model, std::move(vocab),
                                          [&](const BpeModel::MergeVisitor& visit) {
                                            json_scan::for_each_merge(merges, visit);
                                          })
                        : BpeModel::from_json(model);

  impl->added = parse_added_tokens(root);
  impl->vocab_size = int(impl->model.id_to_token().size());
  std::vector<std::string> raw_patterns, norm_patterns;
  std::vector<const AddedToken*> raw_tokens, norm_tokens;
  for (size_t i = 0; i < impl->added.size(); ++i) {
    const AddedToken& a = impl->added[i];
    impl->added_ids[a.content] = a.id;
    impl->added_by_id[a.id] = i;
    impl->vocab_size = std::max(impl->vocab_size, int(a.id) + 1);
    if (a.normalized && impl->normalizer) {
      std::string n = a.content;
      impl->normalizer->normalize(n);
      norm_patterns.push_back(std::move(n));
      norm_tokens.push_back(&a);
    } else {
      raw_patterns.push_back(a.content);
      raw_tokens.push_back(&a);
    }
  }
  impl->raw_matcher = std::make_unique<AddedTokenMatcher>(std::move(raw_patterns), std::move(raw_tokens));
  impl->normalized_matcher = std::make_unique<AddedTokenMatcher>(std::move(norm_patterns), std::move(norm_tokens));
  return impl;
}

void Tokenizer::Impl::encode_section(std::string section, bool at_start, std::vector<TokenId>& out) const {
  if (normalizer) normalizer->normalize(section);
  if (section.empty()) return;
  std::vector<std::string> pieces;
  bool first = true;
  for (const Segment& s : normalized_matcher->split(section)) {
    if (s.id >= 0) {
      out.push_back(s.id);
    } else {
      pieces.assign(1, section.substr(s.begin, s.end - s.begin));
      if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces, at_start && first && s.begin == 0);
      for (const auto& p : pieces) model.encode_word(p, out);
    }
    first = false;
  }
}

std::string Tokenizer::Impl::decode(const TokenId* ids, size_t n, bool skip_special) const {
  std::vector<DecodePiece> pieces;
  pieces.reserve(n);
  const auto& vocab = model.id_to_token();
  for (size_t i = 0; i < n; ++i) {
    const TokenId id = ids[i];
    auto a = added_by_id.find(id);
    if (a != added_by_id.end()) {
      if (skip_special && added[a->second].special) continue;
      pieces.push_back({added[a->second].content, true});
    } else if (id >= 0 && size_t(id) < vocab.size()) {
      pieces.push_back({vocab[size_t(id)], false});
    }
    // ids outside the vocabulary have no text; they are skipped rather than failing a stream.
  }
  if (decoder) {
    decoder->decode_chain(pieces);
    std::string text;
    for (const auto& p : pieces) text += p.text;
    return utf8::lossy(text);
  }
  // Without a decoder the reference joins token strings with spaces.
  std::string text;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i) text += ' ';
    text += pieces[i].text;
  }
  return utf8::lossy(text);
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) p /= "tokenizer.json";
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot open " + p.string());
  std::string text;
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0) throw Error("tokenizer: cannot read " + p.string());
  text.resize(size_t(size));
  in.seekg(0);
  in.read(text.data(), std::streamsize(text.size()));
  if (!in) throw Error("tokenizer: cannot read " + p.string());
  try {
    return std::unique_ptr<Tokenizer>(new Tokenizer(Impl::from_json_text(text)));
  } catch (const Error& e) {
    throw Error(p.string() + ": " + e.what());
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (auto bad = utf8::first_invalid(text))
    throw Error("tokenizer: input is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  for (const Segment& s : impl_->raw_matcher->split(text)) {
    if (s.id >= 0) out.push_back(s.id);
    else impl_->encode_section(std::string(text.substr(s.begin, s.end - s.begin)), s.begin == 0, out);
  }
  if (impl_->post_processor) impl_->post_processor->process(out, add_special_tokens);
  return out;
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const {
  return impl_->decode(ids.data(), ids.size(), skip_special_tokens);
}

int Tokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->added_ids.find(std::string(token));
  if (it != impl_->added_ids.end()) return it->second;
  return impl_->model.token_to_id(token);
}

std::string Tokenizer::id_to_token(TokenId id) const {
  auto a = impl_->added_by_id.find(id);
  if (a != impl_->added_by_id.end()) return impl_->added[a->second].content;
  const auto& v = impl_->model.id_to_token();
  return (id >= 0 && size_t(id) < v.size()) ? v[size_t(id)] : std::string();
}

bool Tokenizer::is_special(TokenId id) const {
  auto a = impl_->added_by_id.find(id);
  return a != impl_->added_by_id.end() && impl_->added[a->second].special;
}

}  // namespace strata
