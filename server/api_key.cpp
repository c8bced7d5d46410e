#include "server/api_key.hpp"

#include <cctype>

namespace strata {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer length every time; the length difference is folded into the result, not a branch.
  size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string presented_key(const std::string& authorization, const std::string& x_api_key) {
  if (authorization.size() > 7) {
    std::string scheme = authorization.substr(0, 7);
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme == "bearer ") {
      size_t start = 7;
      while (start < authorization.size() && authorization[start] == ' ') ++start;
      size_t end = authorization.size();
      while (end > start && authorization[end - 1] == ' ') --end;
      return authorization.substr(start, end - start);
    }
  }
  return x_api_key;
}

bool key_accepted(const std::vector<std::string>& keys, const std::string& presented) {
  if (keys.empty()) return true;
  if (presented.empty()) return false;
  bool ok = false;
  for (const std::string& k : keys) ok = constant_time_equal(k, presented) || ok;  // no short-circuit
  return ok;
}

}  // namespace strata
