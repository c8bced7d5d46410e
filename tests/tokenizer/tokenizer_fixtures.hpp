// Small tokenizer.json documents built in the tests themselves, so each test states its whole input.
#pragma once
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata::test {

using nlohmann::json;

// The per-process directory for fixture files, removed when the test binary exits.
inline const std::filesystem::path& temp_dir() {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("strata_tokenizer_test_" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// Writes `doc` to a fresh file under the temp directory and returns its path.
inline std::string write_temp_json(const json& doc) {
  static std::atomic<int> counter{0};
  namespace fs = std::filesystem;
  const fs::path& dir = temp_dir();
  const fs::path file = dir / ("t" + std::to_string(counter++) + ".json");
  std::ofstream(file) << doc.dump();
  return file.string();
}

inline std::unique_ptr<Tokenizer> load_json(const json& doc) { return Tokenizer::load(write_temp_json(doc)); }

// A byte-level vocabulary: the 256 alphabet characters get ids 0..255 (in byte order), `extra`
// tokens follow in order; merges are given as "a b" strings.
inline json byte_level_model(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8::append(ch, byte_level::byte_to_code_point(uint8_t(b)));
    vocab[ch] = b;
  }
  int next = 256;
  for (const auto& t : extra) vocab[t] = next++;
  return json{{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
}

inline json added_token(int id, const std::string& content, bool special, json extra = json::object()) {
  json t{{"id", id},          {"content", content}, {"special", special}, {"lstrip", false},
         {"rstrip", false},   {"single_word", false}, {"normalized", !special}};
  for (auto it = extra.begin(); it != extra.end(); ++it) t[it.key()] = it.value();
  return t;
}

// A GPT-2 style tokenizer: ByteLevel pre-tokenizer with its regex, ByteLevel decoder.
inline json gpt2_style(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                       json added = json::array()) {
  return json{{"version", "1.0"},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
              {"post_processor", nullptr},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", byte_level_model(extra, merges)}};
}

// A Llama 2 style tokenizer (SentencePiece BPE with byte fallback): the 256 <0xXX> tokens get ids
// 3..258 after <unk>, <s>, </s>; `pieces` follow.
inline json llama2_style(const std::vector<std::string>& pieces, const std::vector<std::string>& merges) {
  json vocab{{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  int next = 259;
  for (const auto& p : pieces) vocab[p] = next++;
  return json{
      {"added_tokens", json::array({added_token(0, "<unk>", true), added_token(1, "<s>", true), added_token(2, "</s>", true)})},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "\u2581"}},
                                     {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}})}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                  {{"type", "ByteFallback"}},
                                  {{"type", "Fuse"}},
                                  {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"unk_token", "<unk>"}, {"byte_fallback", true},
        {"fuse_unk", true}}}};
}

}  // namespace strata::test
