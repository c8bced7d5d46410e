#include "engine/template/string_ops.hpp"

#include <algorithm>
#include <cctype>

#include "engine/template/unicode_text.hpp"

namespace strata::jinja {
namespace {

bool ascii_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
char up(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }
char down(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<char32_t> cps = utf8_decode(s);
  std::vector<char32_t> set;
  if (chars) set = utf8_decode(*chars);
  auto strip_it = [&](char32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_py_space(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  if (b == 0 && e == cps.size()) return s;
  return utf8_encode(cps, b, e);
}

std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, start);
      if (at == std::string::npos) break;
      out.push_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.push_back(s.substr(start));
    return out;
  }
  std::vector<char32_t> cps = utf8_decode(s);
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && is_py_space(cps[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) >= maxsplit) {
      size_t e = n;
      while (e > i && is_py_space(cps[e - 1])) --e;
      out.push_back(utf8_encode(cps, i, e));
      break;
    }
    size_t j = i;
    while (j < n && !is_py_space(cps[j])) ++j;
    out.push_back(utf8_encode(cps, i, j));
    i = j;
  }
  return out;
}

std::vector<std::string> py_rsplit(const std::string& s, const std::optional<std::string>& sep, long maxsplit) {
  if (maxsplit < 0 || !sep) {
    if (maxsplit < 0) return py_split(s, sep, -1);
    // Whitespace rsplit with a limit: split from the right.
    std::vector<char32_t> cps = utf8_decode(s);
    std::vector<std::string> out;
    size_t j = cps.size();
    while (true) {
      while (j > 0 && is_py_space(cps[j - 1])) --j;
      if (j == 0) break;
      if (static_cast<long>(out.size()) >= maxsplit) {
        size_t b = 0;
        while (b < j && is_py_space(cps[b])) ++b;
        out.push_back(utf8_encode(cps, b, j));
        break;
      }
      size_t i = j;
      while (i > 0 && !is_py_space(cps[i - 1])) --i;
      out.push_back(utf8_encode(cps, i, j));
      j = i;
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> out;
  size_t end = s.size();
  while (static_cast<long>(out.size()) < maxsplit) {
    if (end < sep->size()) break;
    size_t at = s.rfind(*sep, end - sep->size());
    if (at == std::string::npos) break;
    out.push_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, long count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement between every character (and at both ends).
    std::vector<char32_t> cps = utf8_decode(s);
    long done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (i < cps.size()) utf8_append(out, cps[i]);
    }
    return out;
  }
  size_t start = 0;
  long done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += replacement;
    start = at + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string py_upper(std::string s) {
  for (char& c : s) c = up(c);
  return s;
}

std::string py_lower(std::string s) {
  for (char& c : s) c = down(c);
  return s;
}

std::string py_capitalize(const std::string& s) {
  std::string out = py_lower(s);
  if (!out.empty()) out[0] = up(out[0]);
  return out;
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    if (ascii_alpha(c)) {
      c = prev_cased ? down(c) : up(c);
      prev_cased = true;
    } else {
      prev_cased = (static_cast<unsigned char>(c) & 0x80) != 0 && prev_cased;
    }
  }
  return out;
}

std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (char c : s) {
    bool sep = std::isspace(static_cast<unsigned char>(c)) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += c;
      word_start = true;
    } else {
      out += word_start ? up(c) : down(c);
      word_start = false;
    }
  }
  return out;
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n' && s[i] != '\r') continue;
    size_t end = i;
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    out.push_back(s.substr(start, (keepends ? i + 1 : end) - start));
    start = i + 1;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

}  // namespace strata::jinja
