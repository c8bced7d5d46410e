// The embedded default model: what `strata serve` runs when no --model is given. The trained strata-tiny
// model wins when it is present; until it lands, the qwen3 test fixture stands in. Both are looked up
// beside the source tree the binary was built from and relative to the executable (build/strata ->
// build/../models/...), so an installed tree and a moved checkout both work.
//
// strata-tiny ships with a draft model, models/strata-tiny-draft: when the default model is strata-tiny and
// nothing set --spec or --draft-model, speculation defaults to that draft.
#pragma once
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/config_sources.hpp"

namespace strata {

// Candidate directories in the order they are tried.
std::vector<std::string> default_model_candidates(const std::string& executable_path);
// The first candidate holding a config.json. Throws strata::Error listing every place looked at.
std::string resolve_default_model_dir(const std::string& executable_path);
// For a model directory named strata-tiny, its sibling strata-tiny-draft when that holds a config.json;
// "" for any other model or when the draft is absent.
std::string default_draft_model_dir(const std::string& model_dir);
// When no --model was given (config.model.model_dir empty), the resolved default model ships a draft
// (default_draft_model_dir) and no source set "spec" or "draft-model", sets spec.mode = Draft and
// spec.draft_model to it and returns true; otherwise leaves config alone and returns false.
bool apply_default_draft(Config& config, const SourceMap& sources, const std::string& resolved_model_dir);
// /proc/self/exe, or "" when it cannot be read.
std::string current_executable_path();

}  // namespace strata
