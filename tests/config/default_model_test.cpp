// Where the embedded default model is looked for.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "config/default_model.hpp"

using namespace strata;
using Catch::Matchers::Contains;

TEST_CASE("strata-tiny is preferred over the qwen3 fixture, beside the sources and beside the executable") {
  const auto c = default_model_candidates("/opt/strata/build/strata");
  REQUIRE(c.size() == 4);
  CHECK_THAT(c[0], Contains("models/strata-tiny"));
  CHECK(c[1] == "/opt/strata/models/strata-tiny");
  CHECK_THAT(c[2], Contains("tests/data/models/qwen3"));
  CHECK(c[3] == "/opt/strata/tests/data/models/qwen3");
}

TEST_CASE("the default model resolves to a directory holding config.json") {
  // The lead's fixture is committed under tests/data/models/qwen3, so from this build tree a default exists.
  const std::string dir = resolve_default_model_dir(current_executable_path());
  CHECK_THAT(dir, Contains("models/"));
}

TEST_CASE("the executable path is readable on Linux") { CHECK_FALSE(current_executable_path().empty()); }

namespace {

// A throwaway models/ tree: strata-tiny (always), strata-tiny-draft (when with_draft), another model.
struct ModelsTree {
  std::string root;
  explicit ModelsTree(bool with_draft) {
    char tmpl[] = "/tmp/strata_default_draft_XXXXXX";
    const char* made = mkdtemp(tmpl);
    REQUIRE(made != nullptr);
    root = made;
    write(root + "/models/strata-tiny");
    write(root + "/models/qwen3");
    if (with_draft) write(root + "/models/strata-tiny-draft");
  }
  ~ModelsTree() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  static void write(const std::string& dir) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/config.json") << "{}\n";
  }
};

}  // namespace

TEST_CASE("strata-tiny's draft is found beside it, and only for strata-tiny") {
  ModelsTree t(true);
  CHECK(default_draft_model_dir(t.root + "/models/strata-tiny") == t.root + "/models/strata-tiny-draft");
  CHECK(default_draft_model_dir(t.root + "/models/strata-tiny/") == t.root + "/models/strata-tiny-draft");
  CHECK(default_draft_model_dir(t.root + "/build/../models/strata-tiny") == t.root + "/models/strata-tiny-draft");
  CHECK(default_draft_model_dir(t.root + "/models/qwen3").empty());
  CHECK(default_draft_model_dir(t.root + "/models/strata-tiny-draft").empty());
}

TEST_CASE("no draft directory with a config.json, no default draft") {
  ModelsTree t(false);
  CHECK(default_draft_model_dir(t.root + "/models/strata-tiny").empty());
  std::filesystem::create_directories(t.root + "/models/strata-tiny-draft");   // present but empty
  CHECK(default_draft_model_dir(t.root + "/models/strata-tiny").empty());
  Config c;
  CHECK_FALSE(apply_default_draft(c, {}, t.root + "/models/strata-tiny"));
  CHECK(c.spec.mode == SpecMode::Off);
  CHECK(c.spec.draft_model.empty());
}

TEST_CASE("the default strata-tiny turns on draft speculation with its draft unless told otherwise") {
  ModelsTree t(true);
  const std::string tiny = t.root + "/models/strata-tiny";

  SECTION("nothing set: draft mode with the sibling draft model") {
    Config c;
    CHECK(apply_default_draft(c, {}, tiny));
    CHECK(c.spec.mode == SpecMode::Draft);
    CHECK(c.spec.draft_model == t.root + "/models/strata-tiny-draft");
  }
  SECTION("an explicit --spec wins, whatever its value") {
    for (SpecMode m : {SpecMode::Off, SpecMode::Ngram}) {
      Config c;
      c.spec.mode = m;
      CHECK_FALSE(apply_default_draft(c, {{"spec", "flag --spec"}}, tiny));
      CHECK(c.spec.mode == m);
      CHECK(c.spec.draft_model.empty());
    }
  }
  SECTION("an explicit --draft-model wins (from any source)") {
    Config c;
    c.spec.draft_model = "/elsewhere/draft";
    CHECK_FALSE(apply_default_draft(c, {{"draft-model", "env STRATA_DRAFT_MODEL"}}, tiny));
    CHECK(c.spec.mode == SpecMode::Off);
    CHECK(c.spec.draft_model == "/elsewhere/draft");
  }
  SECTION("an explicit --model gets no implicit draft, even when it is strata-tiny") {
    Config c;
    c.model.model_dir = tiny;
    CHECK_FALSE(apply_default_draft(c, {{"model", "flag --model"}}, tiny));
    CHECK(c.spec.mode == SpecMode::Off);
  }
  SECTION("another default model (the qwen3 fixture) has no draft") {
    Config c;
    CHECK_FALSE(apply_default_draft(c, {}, t.root + "/models/qwen3"));
    CHECK(c.spec.mode == SpecMode::Off);
  }
}
