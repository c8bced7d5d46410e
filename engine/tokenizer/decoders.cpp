#include "engine/tokenizer/decoders.hpp"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/json_fields.hpp"
#include "engine/tokenizer/pattern.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

namespace {

using nlohmann::json;

class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    std::vector<DecodePiece> out;
    std::string bytes;
    bool pending = false;
    auto flush = [&] {
      if (pending) out.push_back({utf8::lossy(bytes), false});
      bytes.clear();
      pending = false;
    };
    for (auto& p : pieces) {
      if (p.verbatim) {
        flush();
        out.push_back(std::move(p));
        continue;
      }
      pending = true;
      // A token with a character outside the byte alphabet is taken as its own UTF-8 bytes.
      const size_t mark = bytes.size();
      bool in_alphabet = true;
      utf8::for_each_code_point(p.text, [&](char32_t cp, size_t, size_t) {
        const int b = byte_level::code_point_to_byte(cp);
        if (b < 0) in_alphabet = false;
        else bytes.push_back(char(b));
      });
      if (!in_alphabet) {
        bytes.resize(mark);
        bytes += p.text;
      }
    }
    flush();
    pieces.swap(out);
  }
};

bool parse_byte_token(const std::string& t, unsigned char& byte) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return false;
  byte = static_cast<unsigned char>(hi * 16 + lo);
  return true;
}

class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    std::vector<DecodePiece> out;
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty()) return;
      // Ill-formed bytes become U+FFFD per maximal subpart, as the reference's TextDecoder does. (The
      // Rust crate blanks the whole run instead, which would let a later byte change text that a
      // stream has already emitted.)
      out.push_back({utf8::lossy(bytes), false});
      bytes.clear();
    };
    for (auto& p : pieces) {
      unsigned char b;
      if (!p.verbatim && parse_byte_token(p.text, b)) {
        bytes.push_back(char(b));
        continue;
      }
      flush();
      out.push_back(std::move(p));
    }
    flush();
    pieces.swap(out);
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    std::string all;
    for (const auto& p : pieces) all += p.text;
    pieces.assign(1, DecodePiece{std::move(all), false});
  }
};

class Replace final : public Decoder {
 public:
  Replace(Pattern p, std::string content) : pattern_(std::move(p)), content_(std::move(content)) {}
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (auto& p : pieces) p.text = pattern_.replace_all(p.text, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// Removes up to `start` leading and `stop` trailing copies of one character from every piece.
class Strip final : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    if (content_.empty()) return;
    for (auto& p : pieces) {
      std::string& t = p.text;
      size_t b = 0;
      for (size_t k = 0; k < start_ && t.compare(b, content_.size(), content_) == 0; ++k) b += content_.size();
      size_t e = t.size();
      for (size_t k = 0; k < stop_ && e >= b + content_.size() &&
                         t.compare(e - content_.size(), content_.size(), content_) == 0;
           ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class Metaspace final : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first) : marker_(Pattern::literal(std::move(replacement))), strip_first_(strip_first) {}
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string& t = pieces[i].text;
      t = marker_.replace_all(t, " ");
      // The space the pre-tokenizer prepended to the text is not part of it.
      if (i == 0 && strip_first_ && !t.empty() && t[0] == ' ') t.erase(0, 1);
    }
  }

 private:
  Pattern marker_;
  bool strip_first_;
};

// The end-of-word suffix marks a space, except after the last token.
class BpeSuffix final : public Decoder {
 public:
  explicit BpeSuffix(std::string suffix) : suffix_(Pattern::literal(std::move(suffix))) {}
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (size_t i = 0; i < pieces.size(); ++i)
      pieces[i].text = suffix_.replace_all(pieces[i].text, i + 1 == pieces.size() ? "" : " ");
  }

 private:
  Pattern suffix_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (const auto& p : parts_) p->decode_chain(pieces);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = component_type(j, "decoder");
  const std::string what = "decoder " + type;
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(field(j, "pattern", what), what),
                                     string_field(j, "content", what));
  if (type == "Strip") {
    const long long start = int_field(j, "start", what, 0), stop = int_field(j, "stop", what, 0);
    if (start < 0 || stop < 0) throw Error(what + ": start and stop must be non-negative");
    return std::make_unique<Strip>(string_field(j, "content", what), size_t(start), size_t(stop));
  }
  if (type == "Metaspace") {
    bool strip_first = bool_field(j, "add_prefix_space", what, true);
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string())
      strip_first = j["prepend_scheme"].get<std::string>() != "never";
    return std::make_unique<Metaspace>(string_field(j, "replacement", what, "\u2581"), strip_first);
  }
  if (type == "BPEDecoder") return std::make_unique<BpeSuffix>(string_field(j, "suffix", what, "</w>"));
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    const json& list = field(j, "decoders", what);
    if (!list.is_array()) throw Error(what + ": \"decoders\" must be an array");
    for (const auto& item : list)
      if (auto d = make_decoder(item)) parts.push_back(std::move(d));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw Error("tokenizer.json: unsupported decoder type \"" + type + "\"");
}

}  // namespace strata
