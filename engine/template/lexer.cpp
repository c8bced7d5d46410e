#include "engine/template/lexer.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "engine/template/chat_template.hpp"
#include "engine/template/unicode_text.hpp"

namespace strata::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }
bool is_name_char(char c) { return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

std::string normalize_newlines(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // Jinja's keep_trailing_newline=False
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) { result_.source = normalize_newlines(source); }

  LexedTemplate run() {
    const std::string& s = src();
    size_t pos = 0;
    bool line_starting = true;
    while (pos < s.size()) {
      size_t start = find_tag(pos);
      if (start == std::string::npos) {
        emit_data(s.substr(pos), pos);
        break;
      }
      char kind = s[start + 1];
      char sign = start + 2 < s.size() && (s[start + 2] == '-' || s[start + 2] == '+') ? s[start + 2] : 0;
      std::string text = s.substr(pos, start - pos);
      size_t raw_body = kind == '%' ? match_raw_begin(start) : std::string::npos;
      apply_left_control(text, sign, kind != '{', line_starting);
      emit_data(std::move(text), pos);
      if (kind == '#') {
        pos = lex_comment(start);
      } else if (raw_body != std::string::npos) {
        pos = lex_raw(start, raw_body);
      } else {
        pos = lex_tag(start, kind, sign);
      }
      line_starting = pos > 0 && s[pos - 1] == '\n';
    }
    result_.tokens.push_back({Tok::Eof, "", 0, 0.0, s.size()});
    return std::move(result_);
  }

 private:
  const std::string& src() const { return result_.source; }

  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    throw TemplateError("template syntax error at " + describe_position(src(), pos) + ": " + what);
  }

  size_t find_tag(size_t from) const {
    const std::string& s = src();
    for (size_t i = s.find('{', from); i != std::string::npos && i + 1 < s.size(); i = s.find('{', i + 1)) {
      char c = s[i + 1];
      if (c == '{' || c == '%' || c == '#') return i;
    }
    return std::string::npos;
  }

  // `sign` is the tag's opening `-`/`+`; lstrip applies only to block and comment tags.
  void apply_left_control(std::string& text, char sign, bool lstrip_kind, bool line_starting) const {
    if (sign == '-') {
      size_t end = text.size();
      while (end > 0 && is_space(text[end - 1])) --end;
      text.resize(end);
    } else if (sign != '+' && lstrip_kind) {
      size_t nl = text.rfind('\n');
      size_t line_begin = nl == std::string::npos ? 0 : nl + 1;
      if (line_begin == 0 && !line_starting) return;
      for (size_t i = line_begin; i < text.size(); ++i)
        if (!is_space(text[i])) return;
      text.resize(line_begin);
    }
  }

  void emit_data(std::string text, size_t pos) {
    if (!text.empty()) result_.tokens.push_back({Tok::Data, std::move(text), 0, 0.0, pos});
  }

  // After a block tag's `%}`: `-` eats all following whitespace, `+` nothing, otherwise one newline.
  size_t skip_right_control(size_t after_end, char sign) const {
    const std::string& s = src();
    if (sign == '-') {
      while (after_end < s.size() && is_space(s[after_end])) ++after_end;
    } else if (sign != '+' && after_end < s.size() && s[after_end] == '\n') {
      ++after_end;
    }
    return after_end;
  }

  size_t lex_comment(size_t start) {
    const std::string& s = src();
    size_t end = s.find("#}", start + 2);
    if (end == std::string::npos) fail(start, "missing end of comment tag");
    char sign = end > start + 2 && (s[end - 1] == '-' || s[end - 1] == '+') ? s[end - 1] : 0;
    return skip_right_control(end + 2, sign);
  }

  // Matches `{%[-+]? raw [-]?%}` at start; returns the offset where the raw body begins.
  size_t match_raw_begin(size_t start) const {
    const std::string& s = src();
    size_t i = start + 2;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    while (i < s.size() && is_space(s[i])) ++i;
    if (s.compare(i, 3, "raw") != 0) return std::string::npos;
    i += 3;
    if (i < s.size() && is_name_char(s[i])) return std::string::npos;
    while (i < s.size() && is_space(s[i])) ++i;
    if (s.compare(i, 3, "-%}") == 0) {
      i += 3;
      while (i < s.size() && is_space(s[i])) ++i;
      return i;
    }
    if (s.compare(i, 2, "%}") == 0) return i + 2;  // Jinja does not trim a newline after `raw %}`
    return std::string::npos;
  }

  size_t lex_raw(size_t start, size_t body) {
    const std::string& s = src();
    for (size_t i = s.find("{%", body); i != std::string::npos; i = s.find("{%", i + 2)) {
      size_t j = i + 2;
      char sign = j < s.size() && (s[j] == '-' || s[j] == '+') ? s[j] : 0;
      if (sign) ++j;
      while (j < s.size() && is_space(s[j])) ++j;
      if (s.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < s.size() && is_space(s[j])) ++j;
      char end_sign = j < s.size() && (s[j] == '-' || s[j] == '+') ? s[j] : 0;
      if (end_sign) ++j;
      if (s.compare(j, 2, "%}") != 0) continue;
      std::string text = s.substr(body, i - body);
      bool line_starting = body > 0 && s[body - 1] == '\n';
      apply_left_control(text, sign, true, line_starting);
      emit_data(std::move(text), body);
      return skip_right_control(j + 2, end_sign);
    }
    fail(start, "missing end of raw directive");
  }

  size_t lex_tag(size_t start, char kind, char sign) {
    const std::string& s = src();
    bool is_block = kind == '%';
    result_.tokens.push_back({is_block ? Tok::BlockBegin : Tok::VarBegin, "", 0, 0.0, start});
    size_t i = start + 2 + (sign ? 1 : 0);
    int depth = 0;  // open brackets: an end delimiter inside them is an operator (`{{ {'a': {}} }}`)
    const char close = is_block ? '%' : '}';
    while (true) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i >= s.size()) fail(start, is_block ? "unexpected end of template inside a block tag"
                                              : "unexpected end of template inside an expression");
      if (depth == 0) {
        char end_sign = (s[i] == '-' || s[i] == '+') ? s[i] : 0;
        size_t d = i + (end_sign ? 1 : 0);
        if (d + 1 < s.size() && s[d] == close && s[d + 1] == '}' && (end_sign != '+' || is_block)) {
          result_.tokens.push_back({is_block ? Tok::BlockEnd : Tok::VarEnd, "", 0, 0.0, i});
          size_t after = d + 2;
          if (is_block) return skip_right_control(after, end_sign);
          if (end_sign == '-')
            while (after < s.size() && is_space(s[after])) ++after;
          return after;
        }
      }
      char c = s[i];
      if (is_name_start(c)) {
        size_t j = i;
        while (j < s.size() && is_name_char(s[j])) ++j;
        result_.tokens.push_back({Tok::Name, s.substr(i, j - i), 0, 0.0, i});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        i = lex_number(i);
      } else if (c == '\'' || c == '"') {
        i = lex_string(i);
      } else {
        i = lex_operator(i, depth);
      }
    }
  }

  size_t lex_number(size_t i) {
    const std::string& s = src();
    auto digits = [&](size_t j) {
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) ||
                              (s[j] == '_' && j + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[j + 1])))))
        ++j;
      return j;
    };
    size_t j = digits(i);
    bool is_float = false;
    if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
      is_float = true;
      j = digits(j + 1);
    }
    if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
      size_t k = j + 1;
      if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
      if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
        is_float = true;
        j = digits(k);
      }
    }
    std::string text;
    for (size_t k = i; k < j; ++k)
      if (s[k] != '_') text += s[k];
    Token t{is_float ? Tok::Float : Tok::Int, text, 0, 0.0, i};
    errno = 0;
    if (is_float) {
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      t.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(i, "integer literal " + text + " is too large");
    }
    result_.tokens.push_back(std::move(t));
    return j;
  }

  // Python string escapes, as Jinja decodes them (unicode_escape): unknown escapes keep their backslash.
  size_t lex_string(size_t i) {
    const std::string& s = src();
    char quote = s[i];
    std::string value;
    size_t j = i + 1;
    auto hex_value = [&](size_t from, int n) -> long {
      if (from + n > s.size()) return -1;
      long v = 0;
      for (int k = 0; k < n; ++k) {
        char h = s[from + k];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return -1;
        v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      return v;
    };
    while (true) {
      if (j >= s.size()) fail(i, "unterminated string literal");
      char c = s[j];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++j;
        continue;
      }
      if (j + 1 >= s.size()) fail(i, "unterminated string literal");
      char e = s[j + 1];
      j += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\n': break;  // backslash-newline continues the line
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          long cp = hex_value(j, n);
          if (cp < 0 || cp > 0x10ffff) fail(j - 2, std::string("invalid \\") + e + " escape in string literal");
          utf8_append(value, static_cast<char32_t>(cp));
          j += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int cp = e - '0';
            for (int k = 0; k < 2 && j < s.size() && s[j] >= '0' && s[j] <= '7'; ++k) cp = cp * 8 + (s[j++] - '0');
            utf8_append(value, static_cast<char32_t>(cp));
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    result_.tokens.push_back({Tok::String, std::move(value), 0, 0.0, i});
    return j + 1;
  }

  size_t lex_operator(size_t i, int& depth) {
    const std::string& s = src();
    static const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two) {
      if (s.compare(i, 2, op) == 0) {
        result_.tokens.push_back({Tok::Op, op, 0, 0.0, i});
        return i + 2;
      }
    }
    char c = s[i];
    static const std::string singles = "+-*/%~<>=.,:|()[]{};";
    if (singles.find(c) == std::string::npos) fail(i, std::string("unexpected character '") + c + "'");
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) fail(i, std::string("unexpected '") + c + "'");
      --depth;
    }
    result_.tokens.push_back({Tok::Op, std::string(1, c), 0, 0.0, i});
    return i + 1;
  }

  LexedTemplate result_;
};

}  // namespace

LexedTemplate lex(const std::string& source) { return Lexer(source).run(); }

std::string describe_position(const std::string& source, size_t pos) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < pos && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  size_t end = pos < source.size() ? pos : source.size();
  size_t column = utf8_length(std::string_view(source).substr(line_start, end - line_start)) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace strata::jinja
