#include "engine/core/faults.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "engine/core/types.hpp"

namespace strata {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

[[noreturn]] void bad(const std::string& fault, const std::string& why) {
  throw Error("fault spec '" + fault + "': " + why);
}

int64_t parse_count(const std::string& fault, const std::string& name, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) bad(fault, name + "='" + v + "' is not an integer");
  if (x < 1) bad(fault, name + "=" + v + " must be at least 1");
  return x;
}

double parse_number(const std::string& fault, const std::string& name, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x))
    bad(fault, name + "='" + v + "' is not a number");
  return x;
}

bool parse_kind(const std::string& s, FaultKind& k) {
  static const std::pair<const char*, FaultKind> kinds[] = {
      {"stall", FaultKind::Stall}, {"wedge", FaultKind::Wedge}, {"throw", FaultKind::Throw},
      {"backend_error", FaultKind::BackendError}, {"slow", FaultKind::Slow}, {"random", FaultKind::Random}};
  for (const auto& [name, kind] : kinds)
    if (s == name) {
      k = kind;
      return true;
    }
  return false;
}

Fault parse_fault(const std::string& text) {
  size_t at = text.find('@');
  if (at == std::string::npos) bad(text, "expected KIND@PARAM[:PARAM...]");
  Fault f;
  std::string kind = text.substr(0, at);
  if (!parse_kind(kind, f.kind))
    bad(text, "unknown fault '" + kind + "' (known: stall, wedge, throw, backend_error, slow, random)");
  bool has_seconds = false, has_ms = false, has_p = false;
  for (const std::string& param : split(text.substr(at + 1), ':')) {
    size_t eq = param.find('=');
    if (eq == std::string::npos || eq == 0) bad(text, "parameter '" + param + "' is not NAME=VALUE");
    std::string name = param.substr(0, eq), v = param.substr(eq + 1);
    bool random = f.kind == FaultKind::Random;
    if (name == "window" && !random) {
      f.window = parse_count(text, name, v);
    } else if (name == "every" && !random && f.kind != FaultKind::Stall && f.kind != FaultKind::Wedge) {
      f.every = parse_count(text, name, v);
    } else if (name == "seconds" &&
               (random || f.kind == FaultKind::Stall || f.kind == FaultKind::Wedge)) {
      f.seconds = parse_number(text, name, v);
      if (f.seconds <= 0) bad(text, "seconds=" + v + " must be positive");
      has_seconds = true;
    } else if (name == "ms" && (random || f.kind == FaultKind::Slow)) {
      f.ms = parse_number(text, name, v);
      if (f.ms < 0) bad(text, "ms=" + v + " must not be negative");
      has_ms = true;
    } else if (name == "p" && random) {
      f.p = parse_number(text, name, v);
      if (f.p < 0 || f.p > 1) bad(text, "p=" + v + " must be within [0, 1]");
      has_p = true;
    } else if (name == "seed" && random) {
      char* end = nullptr;
      errno = 0;
      unsigned long long s = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno == ERANGE || v[0] == '-') bad(text, "seed='" + v + "' is not an integer");
      f.seed = s;
    } else {
      bad(text, "parameter '" + name + "' does not apply to " + kind);
    }
  }
  switch (f.kind) {
    case FaultKind::Random:
      if (!has_p) bad(text, "random needs p=P");
      if (!has_ms) f.ms = 10;
      break;
    case FaultKind::Stall:
    case FaultKind::Wedge:
      if (f.window == 0) bad(text, kind + " needs window=N");
      if (!has_seconds) bad(text, kind + " needs seconds=S");
      break;
    case FaultKind::Slow:
      if (!has_ms) bad(text, "slow needs ms=M");
      [[fallthrough]];
    default:
      if ((f.window == 0) == (f.every == 0)) bad(text, kind + " needs exactly one of window=N or every=K");
  }
  return f;
}

}  // namespace

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::Stall: return "stall";
    case FaultKind::Wedge: return "wedge";
    case FaultKind::Throw: return "throw";
    case FaultKind::BackendError: return "backend_error";
    case FaultKind::Slow: return "slow";
    case FaultKind::Random: return "random";
  }
  return "?";
}

FaultPlan parse_fault_spec(const std::string& spec) {
  if (spec.empty()) throw Error("fault spec is empty");
  FaultPlan plan;
  for (const std::string& part : split(spec, ',')) {
    if (part.empty()) throw Error("fault spec '" + spec + "': empty fault between commas");
    plan.faults.push_back(parse_fault(part));
  }
  return plan;
}

}  // namespace strata
