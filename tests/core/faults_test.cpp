#include <catch2/catch.hpp>

#include "engine/core/fault_backend.hpp"
#include "engine/core/faults.hpp"
#include "engine/core/types.hpp"

using namespace strata;

TEST_CASE("the documented example fault spec parses into its faults", "[faults]") {
  FaultPlan p = parse_fault_spec(
      "stall@window=5:seconds=3,throw@window=7,backend_error@window=9,slow@every=1:ms=20,random@p=0.05:seed=1");
  REQUIRE(p.faults.size() == 5);
  CHECK(p.faults[0].kind == FaultKind::Stall);
  CHECK(p.faults[0].window == 5);
  CHECK(p.faults[0].seconds == 3.0);
  CHECK(p.faults[1].kind == FaultKind::Throw);
  CHECK(p.faults[1].window == 7);
  CHECK(p.faults[2].kind == FaultKind::BackendError);
  CHECK(p.faults[2].window == 9);
  CHECK(p.faults[3].kind == FaultKind::Slow);
  CHECK(p.faults[3].every == 1);
  CHECK(p.faults[3].ms == 20.0);
  CHECK(p.faults[4].kind == FaultKind::Random);
  CHECK(p.faults[4].p == 0.05);
  CHECK(p.faults[4].seed == 1u);
}

namespace {
std::string error_of(const std::string& spec) {
  try {
    parse_fault_spec(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a bad fault spec is refused with a message naming the bad part", "[faults]") {
  CHECK_THAT(error_of(""), Catch::Contains("empty"));
  CHECK_THAT(error_of("explode@window=1"), Catch::Contains("unknown fault 'explode'"));
  CHECK_THAT(error_of("stall@window=2"), Catch::Contains("seconds"));
  CHECK_THAT(error_of("stall@seconds=2"), Catch::Contains("window"));
  CHECK_THAT(error_of("throw@window=x"), Catch::Contains("window='x'"));
  CHECK_THAT(error_of("throw@window=0"), Catch::Contains("at least 1"));
  CHECK_THAT(error_of("throw@window=1:every=2"), Catch::Contains("exactly one"));
  CHECK_THAT(error_of("slow@every=2"), Catch::Contains("ms"));
  CHECK_THAT(error_of("random@p=1.5"), Catch::Contains("p=1.5"));
  CHECK_THAT(error_of("random@seed=1"), Catch::Contains("needs p"));
  CHECK_THAT(error_of("throw@ms=3:window=1"), Catch::Contains("'ms' does not apply to throw"));
  CHECK_THAT(error_of("throw@window=1,,slow@every=1:ms=1"), Catch::Contains("empty fault"));
  CHECK_THAT(error_of("throw"), Catch::Contains("KIND@PARAM"));
  CHECK_THAT(error_of("throw@window"), Catch::Contains("NAME=VALUE"));
}

TEST_CASE("faults fire at their windows and a random plan is reproducible from its seed", "[faults]") {
  auto inj = std::make_shared<FaultInjector>(parse_fault_spec("throw@window=3,slow@every=2:ms=0"));
  std::vector<std::vector<FaultKind>> fired;
  for (int w = 1; w <= 6; ++w) {
    std::vector<FaultKind> kinds;
    for (const auto& a : inj->next_window()) kinds.push_back(a.kind);
    fired.push_back(kinds);
  }
  CHECK(fired[0].empty());
  CHECK(fired[1] == std::vector<FaultKind>{FaultKind::Slow});
  CHECK(fired[2] == std::vector<FaultKind>{FaultKind::Throw});
  CHECK(fired[3] == std::vector<FaultKind>{FaultKind::Slow});
  CHECK(fired[5] == std::vector<FaultKind>{FaultKind::Slow});

  auto sequence = [](uint64_t seed) {
    auto r = std::make_shared<FaultInjector>(parse_fault_spec("random@p=0.3:seed=" + std::to_string(seed)));
    std::vector<int> s;
    for (int w = 0; w < 200; ++w) {
      auto a = r->next_window();
      s.push_back(a.empty() ? -1 : static_cast<int>(a[0].kind));
    }
    return s;
  };
  auto a = sequence(1);
  CHECK(a == sequence(1));
  CHECK(a != sequence(2));
  long hits = std::count_if(a.begin(), a.end(), [](int k) { return k >= 0; });
  CHECK(hits > 30);   // p = 0.3 over 200 windows: 60 expected
  CHECK(hits < 90);
  CHECK(std::find(a.begin(), a.end(), static_cast<int>(FaultKind::Stall)) == a.end());  // no seconds given
}
