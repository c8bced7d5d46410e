// Times strata's tokenizer on one text file: load time of tokenizer.json, then single-thread encode of
// every paragraph (chunks separated by a blank line, as tokenizer_bench.mjs writes them). Prints one
// JSON object; the checksum lets the driver confirm both implementations produced the same ids.
//
// usage: strata_tokenizer_bench --tokenizer PATH [--text FILE] [--repeat N]
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/types.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path, text_path;
  int repeat = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokenizer")) tokenizer_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--text")) text_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::max(1, std::atoi(argv[i + 1]));
  }
  if (tokenizer_path.empty()) {
    std::cerr << "usage: strata_tokenizer_bench --tokenizer PATH [--text FILE] [--repeat N]\n";
    return 2;
  }
  try {
    // Wall and CPU time both: on a shared machine CPU time is the steadier of the two.
    const auto t_load = std::chrono::steady_clock::now();
    const std::clock_t c_load = std::clock();
    auto tok = strata::Tokenizer::load(tokenizer_path);
    const double load_s = seconds_since(t_load);
    const double load_cpu_s = double(std::clock() - c_load) / CLOCKS_PER_SEC;
    std::cout << "{\"load_s\": " << load_s << ", \"load_cpu_s\": " << load_cpu_s;
    if (!text_path.empty()) {
      std::ifstream in(text_path, std::ios::binary);
      if (!in) throw strata::Error("cannot open " + text_path);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      std::vector<std::string_view> chunks;
      size_t pos = 0;
      while (pos <= text.size()) {
        size_t end = text.find("\n\n", pos);
        if (end == std::string::npos) end = text.size();
        chunks.emplace_back(text.data() + pos, end - pos);
        pos = end + 2;
      }
      double best = 1e30, best_cpu = 1e30;
      uint32_t checksum = 0;
      size_t n_ids = 0;
      for (int r = 0; r < repeat; ++r) {
        checksum = 0;
        n_ids = 0;
        const auto t0 = std::chrono::steady_clock::now();
        const std::clock_t c0 = std::clock();
        for (auto c : chunks) {
          const auto ids = tok->encode(c);
          n_ids += ids.size();
          for (strata::TokenId id : ids) checksum = checksum * 31u + uint32_t(id);
        }
        best = std::min(best, seconds_since(t0));
        best_cpu = std::min(best_cpu, double(std::clock() - c0) / CLOCKS_PER_SEC);
      }
      std::cout << ", \"bytes\": " << text.size() << ", \"chunks\": " << chunks.size() << ", \"ids\": " << n_ids
                << ", \"checksum\": " << checksum << ", \"encode_s\": " << best
                << ", \"encode_cpu_s\": " << best_cpu << ", \"mb_per_s\": " << double(text.size()) / best / 1e6
                << ", \"mb_per_cpu_s\": " << double(text.size()) / best_cpu / 1e6;
    }
    std::cout << "}\n";
    return 0;
  } catch (const strata::Error& e) {
    std::cerr << "strata_tokenizer_bench: " << e.what() << "\n";
    return 1;
  }
}
