#include "config/default_model.hpp"

#include <filesystem>
#include <system_error>

#include "engine/core/types.hpp"

namespace strata {
namespace fs = std::filesystem;

std::vector<std::string> default_model_candidates(const std::string& executable_path) {
  std::vector<fs::path> roots;
#ifdef STRATA_SOURCE_DIR
  roots.emplace_back(STRATA_SOURCE_DIR);
#endif
  if (!executable_path.empty()) roots.push_back(fs::path(executable_path).parent_path() / "..");
  std::vector<std::string> out;
  for (const char* relative : {"models/strata-tiny", "tests/data/models/qwen3"})
    for (const auto& root : roots) out.push_back((root / relative).lexically_normal().string());
  return out;
}

std::string resolve_default_model_dir(const std::string& executable_path) {
  const auto candidates = default_model_candidates(executable_path);
  std::string looked;
  for (const auto& dir : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(dir) / "config.json", ec)) return dir;
    looked += "\n  " + dir;
  }
  throw Error("no --model given and no embedded model found; looked for config.json in:" + looked);
}

std::string default_draft_model_dir(const std::string& model_dir) {
  fs::path p = fs::path(model_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();   // "models/strata-tiny/" normalizes with a trailing slash
  if (p.filename() != "strata-tiny") return "";
  const fs::path draft = p.parent_path() / "strata-tiny-draft";
  std::error_code ec;
  return fs::is_regular_file(draft / "config.json", ec) ? draft.string() : std::string();
}

bool apply_default_draft(Config& config, const SourceMap& sources, const std::string& resolved_model_dir) {
  if (!config.model.model_dir.empty()) return false;   // an explicit --model gets no implicit draft
  if (sources.count("spec") || sources.count("draft-model")) return false;   // explicit settings win
  const std::string draft = default_draft_model_dir(resolved_model_dir);
  if (draft.empty()) return false;
  config.spec.mode = SpecMode::Draft;
  config.spec.draft_model = draft;
  return true;
}

std::string current_executable_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace strata
