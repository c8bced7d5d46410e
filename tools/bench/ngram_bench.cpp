// The n-gram drafter's cost per proposal (prompt lookup: `--spec ngram`, and a draft model's waiting rounds with
// --spec-draft-lookup) on long histories: a prompt of L random tokens, then rounds that each add three
// accepted tokens, the last one never seen before (so every n from max_n down to min_n misses: the most work
// a proposal does).
//
//   ngram_bench [--lengths 512,4096,32768] [--rounds 200] [--vocab 32000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/spec/drafter.hpp"

using namespace strata;

int main(int argc, char** argv) {
  std::vector<int> lengths = {512, 4096, 32768};
  int rounds = 200, vocab = 32000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lengths")) {
      lengths.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string item; std::getline(ss, item, ',');) lengths.push_back(std::atoi(item.c_str()));
    } else if (!std::strcmp(argv[i], "--rounds")) {
      rounds = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--vocab")) {
      vocab = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: ngram_bench [--lengths L,L,...] [--rounds N] [--vocab V]\n");
      return 2;
    }
  }
  if (rounds < 1 || vocab < 2) {
    std::fprintf(stderr, "ngram_bench: --rounds and --vocab must be positive\n");
    return 2;
  }
  std::printf("length  us_per_proposal\n");
  for (int len : lengths) {
    std::mt19937 rng(1);
    std::vector<TokenId> h(static_cast<size_t>(std::max(len, 2)));
    for (TokenId& t : h) t = TokenId(rng() % uint32_t(vocab));
    NgramDrafter d(1, 4);
    size_t proposed = d.propose(h, 4).size();  // the prompt's first proposal
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) {
      h.push_back(TokenId(rng() % uint32_t(vocab)));
      h.push_back(TokenId(rng() % uint32_t(vocab)));
      h.push_back(TokenId(vocab + r));  // never seen before
      proposed += d.propose(h, 4).size();
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%6d  %15.2f\n", len, us / rounds);
    if (proposed > size_t(4)) std::fprintf(stderr, "ngram_bench: unexpected proposals (%zu)\n", proposed);
  }
  return 0;
}
