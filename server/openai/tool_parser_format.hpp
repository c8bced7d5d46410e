// The per-format tool-call state machines behind OutputParser (internal to strata_parsers).
//
// Each format parser consumes the answer text (reasoning already split off) and keeps one invariant: every
// byte it has been fed is, at any time, either emitted (as content or inside a call) or held in buf_, and
// what it emits depends only on the bytes seen, never on where the deltas were cut. Formats differ only in
// how they recognise a call; emission, validation and ids live here.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai/tool_parser.hpp"

namespace strata::tool_parsing {

using Json = nlohmann::ordered_json;  // ordered: arguments keep the model's key order

// Nesting deeper than this is not a tool call; the bound also keeps parsing and dumping off deep recursion.
constexpr int kMaxJsonDepth = 128;

// Finds where a JSON object or array that starts at text[start] ends, resuming where the previous call
// stopped so that a call fed byte by byte costs linear time. Only brackets, strings and the bytes JSON allows
// outside strings are checked; the complete extent is then parsed for real.
class JsonExtent {
 public:
  enum class Status { incomplete, complete, invalid };
  Status scan(std::string_view text, size_t start);
  size_t end() const { return pos_; }  // one past the closing bracket once complete
  void reset() { *this = JsonExtent(); }

 private:
  size_t start_ = std::string_view::npos;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

// Parses `text` as one JSON value, or nothing when it is malformed or nested deeper than kMaxJsonDepth.
std::optional<Json> parse_json(std::string_view text);

struct CallCandidate {
  std::string name;
  std::string arguments;  // compact JSON object
};

class FormatParser {
 public:
  explicit FormatParser(std::vector<std::string> tool_names) : tool_names_(std::move(tool_names)) {}
  virtual ~FormatParser() = default;
  void feed(std::string_view text, ParsedDelta& out);
  void finish(ParsedDelta& out);
  bool saw_calls() const { return next_index_ > 0; }

 protected:
  // Consumes as much of buf_ as can be decided; at_end: no more text will come, decide everything.
  virtual void step(bool at_end) = 0;

  void emit_content(std::string_view text);
  void emit_call(const CallCandidate& call);
  // Emits buf_ up to the first `marker` as content (holding a possible partial marker unless at_end) and
  // returns whether buf_ now starts with the marker.
  bool content_until(std::string_view marker, bool at_end);

  // {"name": .., "arguments" | "parameters": {..}} -> a call, or nothing when it is not a valid call.
  std::optional<CallCandidate> call_from_object(const Json& value) const;
  // A name and its arguments (an object, a string holding an object, or absent) -> a call or nothing.
  std::optional<CallCandidate> call_from_parts(std::string name, const Json* arguments) const;

  std::string buf_;

 private:
  std::vector<std::string> tool_names_;
  ParsedDelta* out_ = nullptr;
  int next_index_ = 0;
  bool after_call_ = false;   // whitespace right after a call is held: it is dropped if nothing follows
  std::string held_space_;
};

std::unique_ptr<FormatParser> make_hermes_parser(std::vector<std::string> tool_names);
std::unique_ptr<FormatParser> make_llama3_json_parser(std::vector<std::string> tool_names);
std::unique_ptr<FormatParser> make_deepseek_v3_parser(std::vector<std::string> tool_names);
std::unique_ptr<FormatParser> make_mistral_parser(std::vector<std::string> tool_names);

// "call_" followed by 24 characters unique within the process (random per process, then counted).
std::string new_call_id();

}  // namespace strata::tool_parsing
