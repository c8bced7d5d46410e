// `strata bench spec` on the CPU with the fixture models: every (sampling, class, batch, mode) row is
// reported, speculation changes no output token, the counters behind the acceptance columns add up, and bad
// input exits 2 naming what is wrong. `strata bench kernels` needs CUDA and says so otherwise.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/child_process.hpp"

using namespace strata::test;
using Catch::Matchers::Contains;

namespace {

const std::string kStrata = std::string(STRATA_BINARY_DIR) + "/strata";
const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";
const std::string kPrompts = std::string(STRATA_SOURCE_DIR) + "/tools/bench/spec_prompts.json";

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata-bench-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// `strata bench spec` on the qwen3 fixture on the CPU with the bench's prompts and `args`, its JSON written to
// NAME.json. The fixtures' 512 positions are too few for the repetitive prompts; the context comes from a
// serve-style YAML file (without it the run would stop at exit 2).
RunResult run_bench(const std::string& name, const std::vector<std::string>& args) {
  const std::string yaml = temp_path(name + ".yaml");
  std::ofstream(yaml) << "ctx-size: 2048\n";
  std::vector<std::string> all = {"bench", "spec", "--model", kModels + "/qwen3", "--device", "cpu", "--config",
                                  yaml, "--threads", "2", "--prompts", kPrompts, "--json", temp_path(name + ".json")};
  all.insert(all.end(), args.begin(), args.end());
  return run_process(kStrata, all);
}

}  // namespace

TEST_CASE("bench spec on the CPU reports every row and speculation changes no token") {
  constexpr int kMaxTokens = 16;
  // The draft model is the target itself: same weights and the same CPU numerics, so every greedy draft is
  // the target's own pick and must be accepted; anything less means the drafter fell out of step. Prompt
  // lookup's copies stay within k here (--spec-lookup-k 3), so no copy after the draft's drafts is verified.
  const RunResult r = run_bench("spec", {"--draft-model", kModels + "/qwen3", "--batch", "1,2", "--spec",
                                         "off,ngram,draft", "--spec-k", "3", "--spec-lookup-k", "3", "--max-tokens",
                                         std::to_string(kMaxTokens)});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, !Contains("MISMATCH"));

  const nlohmann::json doc = read_json(temp_path("spec.json"));
  CHECK(doc["mismatches"] == 0);
  CHECK(doc["device"] == "cpu");
  CHECK(doc["spec_lookup_k"] == 3);
  CHECK(doc["spec_draft_lookup_min"] == 1);
  std::vector<std::string> classes;
  const nlohmann::json prompts = read_json(kPrompts);
  for (const auto& c : prompts["classes"]) classes.push_back(c["name"].get<std::string>());
  REQUIRE(classes.size() >= 2);

  using Key = std::tuple<std::string, std::string, int, std::string>;
  std::set<Key> seen;
  for (const auto& row : doc["rows"]) {
    const Key key{row["sampling"], row["class"], row["batch"], row["mode"]};
    INFO(row.dump());
    CHECK(seen.insert(key).second);  // no row twice
    const int requests = row["requests"];
    CHECK(requests >= row["batch"].get<int>());
    CHECK(requests % row["batch"].get<int>() == 0);
    CHECK(row["tokens"] == requests * kMaxTokens);  // EOS is ignored: every request runs to max_tokens
    CHECK(row["wall_s"].get<double>() > 0.0);
    CHECK(row["tokens_per_s"].get<double>() > 0.0);
    CHECK(row["matches_off"] == true);
    CHECK(row["mismatched_requests"] == 0);
    const long windows = row["verify_windows"], drafted = row["drafted"], accepted = row["accepted"];
    // A target window gives each request of the round at most 1 + k = 4 tokens (--spec-k 3).
    const long target_windows = row["target_windows"];
    CHECK(target_windows >= row["tokens"].get<long>() / (row["batch"].get<long>() * 4));
    CHECK(row["target_window_seconds"].get<double>() > 0.0);
    CHECK(row["target_window_seconds"].get<double>() + row["draft_seconds"].get<double>() <=
          row["wall_s"].get<double>() * 1.01 + 1e-3);  // the engine thread's time lies within the rounds'
    // Drafts made ahead: only the draft model's, on a backend that overlaps them (not this CPU one); so no
    // drafting time is an ahead round's.
    CHECK(row["drafts_ahead"] == 0);
    CHECK(row["draft_seconds_ahead"] == 0.0);
    if (row["mode"] == "off") {
      CHECK(row["speedup"] == 1.0);
      CHECK(windows == 0);
      CHECK(row["mean_accepted"].is_null());
      CHECK(row["acceptance_rate"].is_null());
      continue;
    }
    CHECK(accepted <= drafted);
    CHECK(drafted <= 3 * windows);  // --spec-k 3
    // Per position: a window accepting at position j accepted every earlier one, and the positions add up to
    // all accepted drafts.
    const auto& at = row["accepted_at_position"];
    CHECK(at.size() <= 3);
    double sum = 0, previous = 1.0;
    for (const auto& v : at) {
      CHECK(v.get<double>() <= previous + 1e-12);
      previous = v.get<double>();
      sum += previous * static_cast<double>(windows);
    }
    CHECK(sum == Approx(static_cast<double>(accepted)));
    if (row["mode"] == "draft") {
      // The draft model proposes in every window of every request (it never runs dry like n-gram lookup).
      REQUIRE(windows > 0);
      CHECK(row["draft_seconds"].get<double>() > 0.0);
      CHECK(row["mean_accepted"].get<double>() == Approx(static_cast<double>(accepted) / windows));
      CHECK(row["acceptance_rate"].get<double>() == Approx(static_cast<double>(accepted) / drafted));
      if (row["sampling"] == "greedy") CHECK(accepted == drafted);
    }
  }
  for (const std::string sampling : {"greedy", "seeded"})
    for (const std::string& cls : classes)
      for (int batch : {1, 2})
        for (const std::string mode : {"off", "ngram", "draft"}) {
          INFO(sampling << " " << cls << " " << batch << " " << mode);
          CHECK(seen.count(Key{sampling, cls, batch, mode}) == 1);
        }
  CHECK(seen.size() == 2 * classes.size() * 2 * 3);
}

TEST_CASE("bench spec: prompt lookup's copies reach past k up to --spec-lookup-k") {
  const RunResult r = run_bench("spec_lookup", {"--batch", "1", "--spec", "off,ngram", "--spec-k", "3",
                                                "--spec-lookup-k", "6", "--max-tokens", "32", "--sampling", "greedy"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = read_json(temp_path("spec_lookup.json"));
  CHECK(doc["mismatches"] == 0);
  CHECK(doc["spec_k"] == 3);
  CHECK(doc["spec_lookup_k"] == 6);
  size_t longest = 0;
  for (const auto& row : doc["rows"]) {
    INFO(row.dump());
    if (row["mode"] != "ngram") continue;
    CHECK(row["matches_off"] == true);
    const long windows = row["verify_windows"], drafted = row["drafted"];
    CHECK(drafted <= 6 * windows);
    CHECK(row["accepted_at_position"].size() <= 6);
    longest = std::max(longest, row["accepted_at_position"].size());
  }
  CHECK(longest > 3);  // some copy past k was kept to its end
}

TEST_CASE("bench spec's plain mode is timed against off but not compared with it") {
  const RunResult r = run_bench("plain", {"--batch", "1", "--spec", "plain,ngram", "--sampling", "greedy",
                                          "--max-tokens", "8"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("n/a"));
  const nlohmann::json doc = read_json(temp_path("plain.json"));
  CHECK(doc["mismatches"] == 0);
  int plain_rows = 0;
  for (const auto& row : doc["rows"]) {
    INFO(row.dump());
    REQUIRE(row["speedup_vs_plain"].is_number());  // every key has a plain row to compare with
    if (row["mode"] == "plain") {
      ++plain_rows;
      CHECK(row["matches_off"].is_null());
      CHECK(row["speedup_vs_plain"].get<double>() == Approx(1.0));
      CHECK(row["verify_windows"] == 0);
    } else {
      CHECK(row["matches_off"] == true);
      CHECK(row["speedup_vs_plain"].get<double>() > 0.0);
    }
  }
  CHECK(plain_rows == 2);  // one per prompt class
  CHECK(doc["rows"].size() == 6u);  // off, plain, ngram for each class
}

TEST_CASE("bench spec refuses bad input with exit 2 naming the field") {
  const std::string model = kModels + "/qwen3";
  SECTION("draft mode without a draft model") {
    const RunResult r = run_process(kStrata, {"bench", "spec", "--model", model, "--spec", "off,draft"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--draft-model"));
  }
  SECTION("an unknown mode") {
    const RunResult r = run_process(kStrata, {"bench", "spec", "--model", model, "--spec", "off,fast"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--spec"));
  }
  SECTION("a prompt file whose class has no prompts") {
    const std::string bad = temp_path("bad_prompts.json");
    std::ofstream(bad) << R"({"classes": [{"name": "empty", "prompts": []}]})";
    const RunResult r = run_process(kStrata, {"bench", "spec", "--model", model, "--prompts", bad});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("classes[0].prompts"));
  }
  SECTION("prompts that do not fit the context with max-tokens more") {
    const RunResult r = run_process(kStrata, {"bench", "spec", "--model", model, "--prompts", kPrompts,
                                              "--ctx-size", "64", "--max-tokens", "16"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--max-tokens") && Contains("--ctx-size"));
  }
}

#ifndef STRATA_TEST_CUDA_BUILD
TEST_CASE("bench kernels without CUDA exits 2 and says why") {
  const RunResult r = run_process(kStrata, {"bench", "kernels", "--model", kModels + "/qwen3"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("CUDA"));
}
#endif
