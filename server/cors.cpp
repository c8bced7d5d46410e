#include "server/cors.hpp"

namespace strata {

bool origin_allowed(const std::vector<std::string>& allowed, const std::string& origin) {
  if (origin.empty()) return false;
  for (const std::string& a : allowed)
    if (a == "*" || a == origin) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> cors_headers(const std::vector<std::string>& allowed,
                                                              const std::string& origin, bool preflight,
                                                              const std::string& requested_headers) {
  std::vector<std::pair<std::string, std::string>> h;
  if (!origin_allowed(allowed, origin)) return h;
  h.emplace_back("Access-Control-Allow-Origin", origin);
  h.emplace_back("Vary", "Origin");
  if (preflight) {
    h.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    h.emplace_back("Access-Control-Allow-Headers",
                   requested_headers.empty() ? "Authorization, Content-Type" : requested_headers);
    h.emplace_back("Access-Control-Max-Age", "600");
  }
  return h;
}

}  // namespace strata
