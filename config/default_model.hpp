// The embedded default model: what `strata serve` runs when no --model is given. The trained strata-tiny
// model wins when it is present; until it lands, the qwen3 test fixture stands in. Both are looked up
// beside the source tree the binary was built from and relative to the executable (build/strata ->
// build/../models/...), so an installed tree and a moved checkout both work.
#pragma once
#include <string>
#include <vector>

namespace strata {

// Candidate directories in the order they are tried.
std::vector<std::string> default_model_candidates(const std::string& executable_path);
// The first candidate holding a config.json. Throws strata::Error listing every place looked at.
std::string resolve_default_model_dir(const std::string& executable_path);
// /proc/self/exe, or "" when it cannot be read.
std::string current_executable_path();

}  // namespace strata
