// The tokenize/detokenize commands (`strata tokenize`, `strata detokenize`, and the test tool).
// Each returns the process exit code: 0 on success, 1 with a message on `err` for bad input (an
// unreadable tokenizer, invalid UTF-8, a malformed id array).
#pragma once
#include <iosfwd>
#include <string>

namespace strata {

// Reads UTF-8 text from `in` (all of it), writes the ids as one JSON array and a newline.
int run_tokenize_command(const std::string& tokenizer_path, bool add_special_tokens, std::istream& in,
                         std::ostream& out, std::ostream& err);

// Reads one JSON array of ids from `in`, writes the decoded text (no newline is added).
int run_detokenize_command(const std::string& tokenizer_path, bool skip_special_tokens, std::istream& in,
                           std::ostream& out, std::ostream& err);

// Batch forms for tools that would otherwise reload a large tokenizer per text: each input line is one
// JSON string (tokenize) or one JSON id array (detokenize); each output line is the answer for it.
int run_tokenize_lines_command(const std::string& tokenizer_path, bool add_special_tokens, std::istream& in,
                               std::ostream& out, std::ostream& err);
int run_detokenize_lines_command(const std::string& tokenizer_path, bool skip_special_tokens, std::istream& in,
                                 std::ostream& out, std::ostream& err);

// Each input line is a JSON id array; each output line is the JSON array of the pieces a DecodeStream
// returned for it (one per id, then the flush), so tools can check streaming against decoding.
int run_detokenize_stream_command(const std::string& tokenizer_path, bool skip_special_tokens, std::istream& in,
                                  std::ostream& out, std::ostream& err);

// `tokenize --tokenizer PATH [--add-special-tokens] [--lines]` or `detokenize --tokenizer PATH
// [--skip-special-tokens] [--lines | --stream]`, argv[0] being the program name.
int tokenizer_cli_main(int argc, char** argv);

}  // namespace strata
