#include "config/value_parse.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace strata {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string range_text(long long lo, long long hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

long long parse_integer(const std::string& raw, long long lo, long long hi) {
  const std::string text = trim(raw);
  errno = 0;
  char* end = nullptr;
  const long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  // strtoll accepts "12abc" and "1e3" partially; a value must be the whole text.
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
    throw ValueError("'" + raw + "' is not an integer");
  if (v < lo || v > hi) throw ValueError(std::to_string(v) + " is out of range " + range_text(lo, hi));
  return v;
}

double parse_real(const std::string& raw, double lo, double hi, bool lo_open) {
  const std::string text = trim(raw);
  errno = 0;
  char* end = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v))
    throw ValueError("'" + raw + "' is not a finite number");
  if (v < lo || v > hi || (lo_open && v == lo)) {
    std::string range = (lo_open ? "(" : "[") + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    throw ValueError(text + " is out of range " + range);
  }
  return v;
}

bool parse_boolean(const std::string& raw) {
  const std::string t = lower(trim(raw));
  if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  throw ValueError("'" + raw + "' is not a boolean (true/false, 1/0, yes/no, on/off)");
}

long long parse_byte_size(const std::string& raw, long long lo, long long hi) {
  std::string text = trim(raw);
  long long scale = 1;
  if (!text.empty()) {
    // Accept "8M", "8MB" and "8MiB" alike: all are binary multiples here.
    std::string t = lower(text);
    for (const char* suffix : {"ib", "b"}) {
      const std::string s(suffix);
      if (t.size() > s.size() + 1 && t.compare(t.size() - s.size(), s.size(), s) == 0 &&
          std::isalpha(static_cast<unsigned char>(t[t.size() - s.size() - 1]))) {
        t.resize(t.size() - s.size());
        break;
      }
    }
    switch (t.back()) {
      case 'k': scale = 1LL << 10; break;
      case 'm': scale = 1LL << 20; break;
      case 'g': scale = 1LL << 30; break;
      default: break;
    }
    if (scale != 1) t.pop_back();
    text = t;
  }
  long long v;
  try {
    v = parse_integer(text, 0, (1LL << 62) / scale);
  } catch (const ValueError&) {
    throw ValueError("'" + raw + "' is not a byte size (e.g. 4096, 64k, 8M, 1G)");
  }
  v *= scale;
  if (v < lo || v > hi) throw ValueError(std::to_string(v) + " bytes is out of range " + range_text(lo, hi));
  return v;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = trim(text.substr(start, comma - start));
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace strata
