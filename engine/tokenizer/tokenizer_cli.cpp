#include "engine/tokenizer/tokenizer_cli.hpp"

#include <iostream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace strata {

namespace {

using nlohmann::json;

std::string read_all(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

json parse_json(const std::string& text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(what + " is not JSON: " + e.what());
  }
}

std::vector<TokenId> parse_ids(const json& j, const Tokenizer& tok, const std::string& what) {
  if (!j.is_array()) throw Error(what + " must be a JSON array of token ids");
  std::vector<TokenId> ids;
  ids.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer() || j[i].get<long long>() < 0 || j[i].get<long long>() >= tok.vocab_size())
      throw Error(what + ": element " + std::to_string(i) + " is not a token id in [0, " +
                  std::to_string(tok.vocab_size()) + ")");
    ids.push_back(j[i].get<TokenId>());
  }
  return ids;
}

// Runs body, turning a strata::Error into exit code 1 with the message on err.
// Calls line_fn(line, "line N") for each line of `in`, N counting from 1 (the name error messages use).
template <class F>
void for_each_line(std::istream& in, F&& line_fn) {
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) line_fn(line, "line " + std::to_string(n));
}

template <class F>
int guarded(const char* command, std::ostream& err, F&& body) {
  try {
    body();
    return 0;
  } catch (const Error& e) {
    err << command << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int run_tokenize_command(const std::string& tokenizer_path, bool add_special_tokens, std::istream& in,
                         std::ostream& out, std::ostream& err) {
  return guarded("tokenize", err, [&] {
    auto tok = Tokenizer::load(tokenizer_path);
    out << json(tok->encode(read_all(in), add_special_tokens)).dump() << "\n";
  });
}

int run_detokenize_command(const std::string& tokenizer_path, bool skip_special_tokens, std::istream& in,
                           std::ostream& out, std::ostream& err) {
  return guarded("detokenize", err, [&] {
    auto tok = Tokenizer::load(tokenizer_path);
    out << tok->decode(parse_ids(parse_json(read_all(in), "input"), *tok, "input"), skip_special_tokens);
  });
}

int run_tokenize_lines_command(const std::string& tokenizer_path, bool add_special_tokens, std::istream& in,
                               std::ostream& out, std::ostream& err) {
  return guarded("tokenize", err, [&] {
    auto tok = Tokenizer::load(tokenizer_path);
    for_each_line(in, [&](const std::string& line, const std::string& what) {
      const json j = parse_json(line, what);
      if (!j.is_string()) throw Error(what + " must be a JSON string");
      std::string text;
      try {
        text = j.get<std::string>();
      } catch (const json::exception& e) {
        throw Error(what + ": " + e.what());
      }
      out << json(tok->encode(text, add_special_tokens)).dump() << "\n";
    });
  });
}

int run_detokenize_lines_command(const std::string& tokenizer_path, bool skip_special_tokens, std::istream& in,
                                 std::ostream& out, std::ostream& err) {
  return guarded("detokenize", err, [&] {
    auto tok = Tokenizer::load(tokenizer_path);
    for_each_line(in, [&](const std::string& line, const std::string& what) {
      out << json(tok->decode(parse_ids(parse_json(line, what), *tok, what), skip_special_tokens)).dump() << "\n";
    });
  });
}

int run_detokenize_stream_command(const std::string& tokenizer_path, bool skip_special_tokens, std::istream& in,
                                  std::ostream& out, std::ostream& err) {
  return guarded("detokenize", err, [&] {
    auto tok = Tokenizer::load(tokenizer_path);
    for_each_line(in, [&](const std::string& line, const std::string& what) {
      DecodeStream stream(*tok, skip_special_tokens);
      json pieces = json::array();
      for (TokenId id : parse_ids(parse_json(line, what), *tok, what)) pieces.push_back(stream.step(id));
      pieces.push_back(stream.flush());
      out << pieces.dump() << "\n";
    });
  });
}

int tokenizer_cli_main(int argc, char** argv) {
  const std::string usage =
      "usage: tokenize --tokenizer PATH [--add-special-tokens] [--lines]\n"
      "       detokenize --tokenizer PATH [--skip-special-tokens] [--lines | --stream]\n";
  if (argc < 2) {
    std::cerr << usage;
    return 2;
  }
  const std::string command = argv[1];
  std::string path;
  bool flag = false, lines = false, stream = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tokenizer" && i + 1 < argc) {
      path = argv[++i];
    } else if ((command == "tokenize" && a == "--add-special-tokens") ||
               (command == "detokenize" && a == "--skip-special-tokens")) {
      flag = true;
    } else if (a == "--lines") {
      lines = true;
    } else if (command == "detokenize" && a == "--stream") {
      stream = true;
    } else {
      std::cerr << "unknown argument: " << a << "\n" << usage;
      return 2;
    }
  }
  if (path.empty()) {
    std::cerr << "missing --tokenizer PATH\n" << usage;
    return 2;
  }
  std::ios::sync_with_stdio(false);
  if (command == "tokenize")
    return lines ? run_tokenize_lines_command(path, flag, std::cin, std::cout, std::cerr)
                 : run_tokenize_command(path, flag, std::cin, std::cout, std::cerr);
  if (command == "detokenize" && stream)
    return run_detokenize_stream_command(path, flag, std::cin, std::cout, std::cerr);
  if (command == "detokenize")
    return lines ? run_detokenize_lines_command(path, flag, std::cin, std::cout, std::cerr)
                 : run_detokenize_command(path, flag, std::cin, std::cout, std::cerr);
  std::cerr << "unknown command: " << command << "\n" << usage;
  return 2;
}

}  // namespace strata
