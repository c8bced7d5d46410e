// CORS per --cors-origins. Empty list: no CORS headers at all (browsers then refuse cross-origin calls).
// "*" allows any origin. The allowed origin is echoed (with Vary: Origin) rather than "*", so credentials work.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace strata {

bool origin_allowed(const std::vector<std::string>& allowed, const std::string& origin);
// Headers for a response to a request carrying `origin`; empty when CORS is off or the origin is not allowed.
std::vector<std::pair<std::string, std::string>> cors_headers(const std::vector<std::string>& allowed,
                                                              const std::string& origin, bool preflight,
                                                              const std::string& requested_headers);

}  // namespace strata
