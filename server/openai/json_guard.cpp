#include "server/openai/json_guard.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace strata {
namespace {

// One open container. For objects `key` is the member being read; for arrays `index` the element.
struct Frame {
  bool is_object = false;
  std::string key;
  size_t index = 0;
};

class Checker {
 public:
  Checker(std::string_view text, const JsonLimits& limits) : s_(text), lim_(limits) {}

  JsonGuardResult run() {
    skip_ws();
    if (pos_ >= s_.size()) return fail("the body is empty; expected a JSON object");
    // States of the iterative walk: expecting a value, or expecting ',' / closer after one.
    bool want_value = true;
    while (true) {
      if (want_value) {
        if (!value_start()) return result_;
        // value_start opened a container or consumed a scalar.
        if (opened_) {
          opened_ = false;
          skip_ws();
          char closer = stack_.back().is_object ? '}' : ']';
          if (pos_ < s_.size() && s_[pos_] == closer) {  // empty container
            ++pos_;
            stack_.pop_back();
          } else {
            if (stack_.back().is_object && !read_key()) return result_;
            continue;  // want_value stays true
          }
        }
        want_value = false;
      }
      skip_ws();
      if (stack_.empty()) {
        if (pos_ != s_.size()) return fail("unexpected data after the end of the JSON document");
        return result_;
      }
      if (pos_ >= s_.size()) return fail("the body ends inside a JSON value (truncated?)");
      Frame& top = stack_.back();
      char c = s_[pos_];
      if (c == ',') {
        ++pos_;
        skip_ws();
        if (top.is_object) {
          if (!read_key()) return result_;
        } else {
          ++top.index;
        }
        want_value = true;
      } else if (c == (top.is_object ? '}' : ']')) {
        ++pos_;
        stack_.pop_back();
      } else {
        return fail(top.is_object ? "expected ',' or '}' after an object member"
                                  : "expected ',' or ']' after an array element");
      }
    }
  }

 private:
  std::string path() const {
    std::string p;
    for (const Frame& f : stack_) {
      if (f.is_object) {
        if (!p.empty()) p += '.';
        p += f.key;
      } else {
        p += '[' + std::to_string(f.index) + ']';
      }
    }
    return p;
  }

  JsonGuardResult fail(const std::string& why) {
    result_.ok = false;
    result_.path = path();
    result_.message = "invalid JSON at byte " + std::to_string(pos_);
    if (!result_.path.empty()) result_.message += " in '" + result_.path + "'";
    result_.message += ": " + why;
    return result_;
  }
  bool failb(const std::string& why) {
    fail(why);
    return false;
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool count_value() {
    if (++values_ > lim_.max_values)
      return failb("more than " + std::to_string(lim_.max_values) + " JSON values in one body");
    return true;
  }

  // Reads `"key" :` into the top frame (keys longer than 64 bytes are shortened in paths only).
  bool read_key() {
    if (pos_ >= s_.size()) return failb("the body ends inside an object (truncated?)");
    if (s_[pos_] != '"') return failb("expected a string key in an object");
    std::string key;
    if (!read_string(&key)) return false;
    if (key.size() > 64) key = key.substr(0, 64) + "...";
    stack_.back().key = key;
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != ':') return failb("expected ':' after an object key");
    ++pos_;
    skip_ws();
    return true;
  }

  bool value_start() {
    skip_ws();
    if (pos_ >= s_.size()) return failb("the body ends where a value was expected (truncated?)");
    if (!count_value()) return false;
    char c = s_[pos_];
    if (c == '{' || c == '[') {
      if (static_cast<int>(stack_.size()) >= lim_.max_depth)
        return failb("JSON nesting is deeper than the limit of " + std::to_string(lim_.max_depth));
      ++pos_;
      Frame f;
      f.is_object = (c == '{');
      stack_.push_back(std::move(f));
      opened_ = true;
      return true;
    }
    if (c == '"') return read_string(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return read_number();
    if (literal("true") || literal("false") || literal("null")) return true;
    if (literal("NaN") || literal("Infinity") || literal("-Infinity"))
      return failb("NaN and Infinity are not valid JSON numbers");
    return failb(std::string("unexpected character ") + describe(c) + " where a value was expected");
  }

  static std::string describe(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
    static const char* hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  bool read_number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_.substr(pos_, 8) == "Infinity") return failb("NaN and Infinity are not valid JSON numbers");
    if (pos_ >= s_.size() || !isdigit_(s_[pos_])) return failb("a number needs digits after '-'");
    if (s_[pos_] == '0') {
      ++pos_;
      if (pos_ < s_.size() && isdigit_(s_[pos_])) return failb("numbers may not have leading zeros");
    } else {
      while (pos_ < s_.size() && isdigit_(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || !isdigit_(s_[pos_])) return failb("a number needs digits after '.'");
      while (pos_ < s_.size() && isdigit_(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !isdigit_(s_[pos_])) return failb("a number needs digits in its exponent");
      while (pos_ < s_.size() && isdigit_(s_[pos_])) ++pos_;
    }
    size_t len = pos_ - start;
    if (len > 512) return failb("a number literal is longer than 512 characters");
    // A literal that overflows a double would become infinity downstream; reject it here.
    std::string tok(s_.substr(start, len));
    errno = 0;
    double v = std::strtod(tok.c_str(), nullptr);
    if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0)) {
      pos_ = start;
      return failb("the number " + (tok.size() > 40 ? tok.substr(0, 40) + "..." : tok) + " is out of range");
    }
    return true;
  }

  static bool isdigit_(char c) { return c >= '0' && c <= '9'; }
  static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool read_u_escape(unsigned* out) {
    // pos_ is at the 'u'
    if (pos_ + 5 > s_.size()) return failb("truncated \\u escape in a string");
    unsigned v = 0;
    for (size_t i = 1; i <= 4; ++i) {
      int h = hexval(s_[pos_ + i]);
      if (h < 0) return failb("a \\u escape needs four hex digits");
      v = v * 16 + static_cast<unsigned>(h);
    }
    pos_ += 5;
    *out = v;
    return true;
  }

  // Reads a string starting at the opening quote. When `out` is given, stores the raw bytes (keys only).
  bool read_string(std::string* out) {
    size_t start = pos_;
    ++pos_;
    while (true) {
      if (pos_ >= s_.size()) {
        pos_ = start;
        return failb("a string is not terminated (truncated?)");
      }
      if (pos_ - start - 1 > lim_.max_string_bytes)
        return failb("a string is longer than the limit of " + std::to_string(lim_.max_string_bytes) + " bytes");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return failb("a control character (" + describe(static_cast<char>(c)) + ") must be escaped in a string");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) return failb("a string ends inside an escape (truncated?)");
        char e = s_[pos_];
        if (e == 'u') {
          unsigned cp;
          if (!read_u_escape(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return failb("lone low surrogate \\u" + hex4(cp) + " in a string");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") return failb("lone high surrogate \\u" + hex4(cp) + " in a string");
            ++pos_;
            unsigned lo;
            if (!read_u_escape(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF)
              return failb("high surrogate \\u" + hex4(cp) + " is not followed by a low surrogate");
          }
          if (out) out->append("?");
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
          return failb(std::string("invalid escape \\") + describe(e) + " in a string");
        if (out) out->push_back(e);
        ++pos_;
        continue;
      }
      if (c < 0x80) {
        if (out) out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      size_t n = utf8_sequence(pos_);
      if (n == 0) return failb("invalid UTF-8 (" + describe(static_cast<char>(c)) + ") in a string");
      if (out) out->append(s_.substr(pos_, n));
      pos_ += n;
    }
  }

  // Length of the well-formed UTF-8 sequence at i (RFC 3629: no overlongs, no surrogates, <= U+10FFFF), or 0.
  size_t utf8_sequence(size_t i) const {
    auto at = [&](size_t k) -> unsigned { return i + k < s_.size() ? static_cast<unsigned char>(s_[i + k]) : 0u; };
    unsigned b0 = at(0);
    auto cont = [](unsigned b) { return (b & 0xC0) == 0x80; };
    if (b0 >= 0xC2 && b0 <= 0xDF) return cont(at(1)) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      unsigned b1 = at(1);
      if (b0 == 0xE0 && (b1 < 0xA0 || b1 > 0xBF)) return 0;
      if (b0 == 0xED && (b1 < 0x80 || b1 > 0x9F)) return 0;  // UTF-16 surrogates encoded in UTF-8
      return cont(b1) && cont(at(2)) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      unsigned b1 = at(1);
      if (b0 == 0xF0 && (b1 < 0x90 || b1 > 0xBF)) return 0;
      if (b0 == 0xF4 && (b1 < 0x80 || b1 > 0x8F)) return 0;
      return cont(b1) && cont(at(2)) && cont(at(3)) ? 4 : 0;
    }
    return 0;
  }

  static std::string hex4(unsigned v) {
    static const char* hex = "0123456789ABCDEF";
    std::string s(4, '0');
    for (int i = 3; i >= 0; --i, v >>= 4) s[i] = hex[v & 15];
    return s;
  }

  std::string_view s_;
  JsonLimits lim_;
  size_t pos_ = 0;
  size_t values_ = 0;
  bool opened_ = false;
  std::vector<Frame> stack_;
  JsonGuardResult result_;
};

}  // namespace

JsonGuardResult check_json(std::string_view text, const JsonLimits& limits) {
  return Checker(text, limits).run();
}

}  // namespace strata
