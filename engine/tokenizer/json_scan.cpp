#include "engine/tokenizer/json_scan.hpp"

#include <cstring>
#include <functional>

#include "engine/tokenizer/utf8.hpp"

namespace strata::json_scan {

namespace {

struct Cursor {
  std::string_view s;
  size_t i = 0;
  bool ok = true;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  // Skips a string starting at s[i] == '"'.
  bool skip_string() {
    ++i;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        ++i;
        return true;
      }
      i += (c == '\\') ? 2 : 1;
    }
    return false;
  }
  bool skip_value() {
    ws();
    if (i >= s.size()) return false;
    const char c = s[i];
    if (c == '"') return skip_string();
    if (c == '{' || c == '[') {
      int depth = 0;
      while (i < s.size()) {
        const char d = s[i];
        if (d == '"') {
          if (!skip_string()) return false;
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') {
          --depth;
          if (depth == 0) {
            ++i;
            return true;
          }
        }
        ++i;
      }
      return false;
    }
    // number, true, false, null
    const size_t start = i;
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
           s[i] != '\r' && s[i] != '\t')
      ++i;
    return i > start;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool read_hex4(uint32_t& v) {
    if (i + 4 > s.size()) return false;
    v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = hex(s[i + size_t(k)]);
      if (h < 0) return false;
      v = v * 16 + uint32_t(h);
    }
    i += 4;
    return true;
  }
  // Reads a string at s[i] == '"' into out (escapes decoded).
  bool read_string(std::string& out) {
    ws();
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    out.clear();
    while (i < s.size()) {
      // Copy the run up to the next quote or backslash in one go.
      size_t j = i;
      while (j < s.size() && s[j] != '"' && s[j] != '\\') {
        if (static_cast<unsigned char>(s[j]) < 0x20) return false;  // raw control characters are not JSON
        ++j;
      }
      out.append(s.data() + i, j - i);
      i = j;
      if (i >= s.size()) return false;
      if (s[i] == '"') {
        ++i;
        return !utf8::first_invalid(out);
      }
      ++i;  // backslash
      if (i >= s.size()) return false;
      const char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!read_hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (i + 2 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return false;
            i += 2;
            if (!read_hex4(lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
          }
          utf8::append(out, char32_t(cp));
          break;
        }
        default: return false;
      }
    }
    return false;
  }
  bool read_int(long long& v) {
    ws();
    size_t start = i;
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
      neg = true;
      ++i;
    }
    v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + (s[i] - '0');
      if (v > (1LL << 40)) return false;
      ++i;
    }
    if (i == start + (neg ? 1 : 0)) return false;
    if (i < s.size() && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) return false;
    if (neg) v = -v;
    return true;
  }
};

// Finds the value of `key` in the object starting at c.i, leaving c after the object.
bool scan_object(Cursor& c, const std::function<bool(const std::string&, Cursor&)>& on_key) {
  if (!c.eat('{')) return false;
  if (c.eat('}')) return true;
  std::string key;
  while (true) {
    if (!c.read_string(key) || !c.eat(':')) return false;
    if (!on_key(key, c)) return false;
    if (c.eat(',')) continue;
    return c.eat('}');
  }
}

std::string where(size_t n) { return "entry " + std::to_string(n); }

}  // namespace

std::optional<ModelSpans> find_model_spans(std::string_view doc) {
  Cursor c{doc};
  ModelSpans spans;
  bool ok = scan_object(c, [&](const std::string& key, Cursor& cur) {
    if (key != "model") return cur.skip_value();
    cur.ws();
    return scan_object(cur, [&](const std::string& mkey, Cursor& m) {
      m.ws();
      Span* target = mkey == "vocab" ? &spans.vocab : mkey == "merges" ? &spans.merges : nullptr;
      const size_t begin = m.i;
      if (!m.skip_value()) return false;
      if (target) *target = Span{begin, m.i, true};
      return true;
    });
  });
  c.ws();
  if (!ok || c.i != doc.size()) return std::nullopt;
  return spans;
}

std::vector<std::pair<std::string, TokenId>> parse_vocab(std::string_view value) {
  std::vector<std::pair<std::string, TokenId>> out;
  out.reserve(value.size() / 12);
  Cursor c{value};
  if (!c.eat('{')) throw Error("model.vocab must be an object of token -> id");
  if (c.eat('}')) return out;
  std::string key;
  while (true) {
    long long id;
    if (!c.read_string(key)) throw Error("model.vocab " + where(out.size()) + ": bad token string");
    if (!c.eat(':') || !c.read_int(id) || id < 0 || id > INT32_MAX)
      throw Error("model.vocab entry \"" + key + "\" must have a non-negative integer id");
    out.emplace_back(key, TokenId(id));
    if (c.eat(',')) continue;
    if (c.eat('}')) break;
    throw Error("model.vocab " + where(out.size()) + ": expected , or }");
  }
  return out;
}

void for_each_merge(std::string_view value, const std::function<void(std::string_view, std::string_view)>& visit) {
  Cursor c{value};
  if (!c.eat('[')) throw Error("model.merges must be an array");
  if (c.eat(']')) return;
  std::string a, b;
  for (size_t n = 0;; ++n) {
    c.ws();
    if (c.i < value.size() && value[c.i] == '[') {
      ++c.i;
      if (!c.read_string(a) || !c.eat(',') || !c.read_string(b) || !c.eat(']'))
        throw Error("model.merges " + where(n) + " must be [\"a\", \"b\"]");
      visit(a, b);
    } else {
      if (!c.read_string(a)) throw Error("model.merges " + where(n) + " must be \"a b\" or [\"a\", \"b\"]");
      const size_t sp = a.find(' ');
      if (sp == std::string::npos || a.find(' ', sp + 1) != std::string::npos)
        throw Error("model.merges " + where(n) + " \"" + a + "\" is not \"left right\"");
      visit(std::string_view(a).substr(0, sp), std::string_view(a).substr(sp + 1));
    }
    if (c.eat(',')) continue;
    if (c.eat(']')) break;
    throw Error("model.merges " + where(n) + ": expected , or ]");
  }
}

}  // namespace strata::json_scan
