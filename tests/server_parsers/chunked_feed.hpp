// Feeds one canned model output through an OutputParser cut in many ways, and checks that every cut gives
// the same message and that it is the one written by hand in the test.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai/tool_parser.hpp"

namespace strata::testing {

struct ExpectedCall {
  std::string name;
  std::string arguments;
};

struct Expected {
  std::string content;
  std::string reasoning;
  std::vector<ExpectedCall> calls;
};

// Feeds text[cuts[i-1], cuts[i]) in turn, then finish(), checking each delta's shape on the way.
ParsedMessage feed_with_cuts(const OutputParserOptions& options, std::string_view text,
                             const std::vector<size_t>& cuts);

// Whole, 1-byte and 300 seeded random chunkings must all give `expected`; call ids must be unique.
void require_every_chunking_gives(const OutputParserOptions& options, std::string_view text,
                                  const Expected& expected);

OutputParserOptions with_format(ToolFormat format, std::vector<std::string> tool_names = {});

}  // namespace strata::testing
