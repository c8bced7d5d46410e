#include "engine/tokenizer/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <vector>

#include "engine/core/types.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

namespace {

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char other_case(char c) { return std::islower(static_cast<unsigned char>(c)) ? char(std::toupper(c)) : char(std::tolower(c)); }

// Per-thread JIT stack: the default 32 KiB runs out on long runs of whitespace with look-aheads.
struct JitStack {
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  JitStack() {
    if (stack && ctx) pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~JitStack() {
    pcre2_match_context_free(ctx);
    pcre2_jit_stack_free(stack);
  }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

std::string Regex::translate(const std::string& p) {
  // Rewrites only what differs between Oniguruma (as the reference emulates it) and PCRE2; everything
  // else passes through byte for byte. Groups are tracked to know where (?i: applies.
  std::string out;
  std::vector<bool> fold_stack;
  bool fold = false;
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      if (n == 's') {
        out += "\\p{White_Space}";
      } else if (n == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += c;
        out += n;
        // \p{..}, \x{..}: copy the braces verbatim so their letters are never case-folded.
        if ((n == 'p' || n == 'P' || n == 'x') && i + 2 < p.size() && p[i + 2] == '{') {
          size_t close = p.find('}', i + 2);
          if (close != std::string::npos) {
            out.append(p, i + 2, close - (i + 2) + 1);
            i = close + 1;
            continue;
          }
        }
      }
      i += 2;
      continue;
    }
    if (in_class) {
      if (c == ']') {
        in_class = false;
        out += c;
      } else if (fold && ascii_letter(c)) {
        // A folded class gains the other case of each letter and of each letter range.
        if (i + 2 < p.size() && p[i + 1] == '-' && ascii_letter(p[i + 2])) {
          out += c;
          out += '-';
          out += p[i + 2];
          out += other_case(c);
          out += '-';
          out += other_case(p[i + 2]);
          i += 3;
          continue;
        }
        out += c;
        out += other_case(c);
      } else {
        out += c;
      }
      ++i;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      ++i;
      if (i < p.size() && p[i] == '^') out += p[i++];
      if (i < p.size() && p[i] == ']') out += p[i++];  // a leading ] is literal
      continue;
    }
    if (c == '(') {
      fold_stack.push_back(fold);
      if (p.compare(i, 4, "(?i:") == 0) {
        fold = true;
        out += "(?:";
        i += 4;
        continue;
      }
      out += c;
      ++i;
      continue;
    }
    if (c == ')') {
      if (!fold_stack.empty()) {
        fold = fold_stack.back();
        fold_stack.pop_back();
      }
      out += c;
      ++i;
      continue;
    }
    if (fold && ascii_letter(c)) {
      out += '[';
      out += c;
      out += other_case(c);
      out += ']';
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

Regex::Regex(const std::string& pattern, const std::string& what) : what_(what) {
  const std::string translated = translate(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &offset, cctx);
  pcre2_compile_context_free(cctx);
  if (!code)
    throw Error(what + ": invalid regex /" + pattern + "/ at offset " + std::to_string(offset) + ": " +
                pcre2_message(err));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter gives the same matches
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::for_each_match(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const {
  thread_local JitStack jit;
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (!md) throw Error(what_ + ": out of memory for regex match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    // NO_UTF_CHECK: callers pass validated UTF-8 (encode rejects anything else up front).
    int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, jit.ctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      throw Error(what_ + ": regex match failed: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (e > s) {
      on_match(s, e);
      pos = e;
    } else {
      // An empty match produces no piece; step over one code point so the scan always advances.
      if (s >= text.size()) break;
      size_t n = utf8::sequence_length(text, s);
      pos = s + (n ? n : 1);
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace strata
