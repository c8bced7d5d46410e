// Where the embedded default model is looked for.
#include <catch2/catch.hpp>

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
