// Splits a template into text and tag tokens the way Jinja2's lexer does with transformers' settings:
// trim_blocks (one newline after a block or comment tag is dropped), lstrip_blocks (spaces before a block
// or comment tag at the start of a line are dropped, unless the tag opens with `+`), `-` strips all
// whitespace on its side, newlines are normalized to "\n" and one trailing newline of the source is dropped.
// The whitespace rules are applied here, so the parser and evaluator never see the discarded text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::jinja {

enum class Tok : uint8_t { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok type;
  std::string text;  // Data text, a name, an operator, or a string literal's decoded value
  int64_t int_value = 0;
  double float_value = 0.0;
  size_t pos = 0;  // byte offset into the normalized source
};

struct LexedTemplate {
  std::string source;  // newline-normalized source that `pos` refers to
  std::vector<Token> tokens;
};

// Throws TemplateError with line and column on an unterminated tag, comment or string, or a stray character.
LexedTemplate lex(const std::string& source);

// "line L, column C" of a byte offset, columns counted in code points from 1.
std::string describe_position(const std::string& source, size_t pos);

}  // namespace strata::jinja
