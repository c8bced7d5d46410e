#include "engine/template/operators.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/template/chat_template.hpp"
#include "engine/template/python_text.hpp"

namespace strata::jinja {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw TemplateError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                      b.type_name() + "'");
}

bool both_int(const Value& a, const Value& b) {
  return (a.is_int() || a.kind() == Kind::Bool) && (b.is_int() || b.kind() == Kind::Bool);
}

Value checked(bool overflow, int64_t r) {
  if (overflow) throw TemplateError("integer overflow: results beyond 64 bits are not supported");
  return Value(r);
}

Value repeat(const Value& seq, const Value& count, const SizeLimits& limits) {
  int64_t n = count.to_int();
  if (n < 0) n = 0;
  if (seq.is_string()) {
    if (n > 0 && seq.str().size() * static_cast<uint64_t>(n) > limits.max_string_bytes)
      throw TemplateError("string repetition exceeds the output size limit");
    std::string out;
    out.reserve(seq.str().size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(std::move(out));
  }
  const List& items = seq.items();
  if (n > 0 && items.size() * static_cast<uint64_t>(n) > static_cast<uint64_t>(limits.max_list_items))
    throw TemplateError("list repetition exceeds the loop iteration limit");
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.is_tuple());
}

double floor_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b, const SizeLimits& limits) {
  char c = op[0];
  bool numeric = a.is_number() && b.is_number();
  if (op == "+") {
    if (numeric) {
      int64_t r = 0;
      if (both_int(a, b)) {
        bool overflow = __builtin_add_overflow(a.to_int(), b.to_int(), &r);
        return checked(overflow, r);
      }
      return Value(a.to_double() + b.to_double());
    }
    if (a.is_string() && b.is_string()) {
      if (a.str().size() + b.str().size() > limits.max_string_bytes)
        throw TemplateError("string concatenation exceeds the output size limit");
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      if (static_cast<long>(a.items().size() + b.items().size()) > limits.max_list_items)
        throw TemplateError("list concatenation exceeds the loop iteration limit");
      List out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.is_tuple());
    }
    if (a.is_string()) throw TemplateError(std::string("can only concatenate str (not \"") + b.type_name() + "\") to str");
    if (a.is_list())
      throw TemplateError(std::string("can only concatenate list (not \"") + b.type_name() + "\") to list");
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (numeric) {
      int64_t r = 0;
      if (both_int(a, b)) {
        bool overflow = __builtin_mul_overflow(a.to_int(), b.to_int(), &r);
        return checked(overflow, r);
      }
      return Value(a.to_double() * b.to_double());
    }
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.kind() == Kind::Bool)) return repeat(a, b, limits);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.kind() == Kind::Bool)) return repeat(b, a, limits);
    unsupported(op, a, b);
  }
  if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b));
  if (!numeric) unsupported(op, a, b);
  switch (c) {
    case '-': {
      int64_t r = 0;
      if (both_int(a, b)) {
        bool overflow = __builtin_sub_overflow(a.to_int(), b.to_int(), &r);
        return checked(overflow, r);
      }
      return Value(a.to_double() - b.to_double());
    }
    case '/':
      if (op == "//") {
        if (both_int(a, b)) {
          int64_t x = a.to_int(), y = b.to_int();
          if (y == 0) throw TemplateError("integer division or modulo by zero");
          if (x == INT64_MIN && y == -1) return checked(true, 0);
          int64_t q = x / y;
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          return Value(q);
        }
        if (b.to_double() == 0) throw TemplateError("float floor division by zero");
        return Value(std::floor(a.to_double() / b.to_double()));
      }
      if (b.to_double() == 0) throw TemplateError("division by zero");
      return Value(a.to_double() / b.to_double());
    case '%':
      if (both_int(a, b)) {
        int64_t x = a.to_int(), y = b.to_int();
        if (y == 0) throw TemplateError("integer division or modulo by zero");
        if (y == -1) return Value(int64_t{0});
        int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value(m);
      }
      if (b.to_double() == 0) throw TemplateError("float modulo");
      return Value(floor_mod(a.to_double(), b.to_double()));
    case '*': {  // **
      if (both_int(a, b) && b.to_int() >= 0) {
        int64_t base = a.to_int(), e = b.to_int(), r = 1;
        bool overflow = false;
        while (e > 0 && !overflow) {
          if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
          e >>= 1;
          if (e > 0 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
        return checked(overflow, r);
      }
      if (a.to_double() == 0 && b.to_double() < 0) throw TemplateError("0.0 cannot be raised to a negative power");
      return Value(std::pow(a.to_double(), b.to_double()));
    }
  }
  unsupported(op, a, b);
}

bool py_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (both_int(a, b)) return a.to_int() < b.to_int();
    return a.to_double() < b.to_double();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
  if (a.is_list() && b.is_list()) {
    ValueNestingGuard guard;
    const List& x = a.items();
    const List& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw TemplateError(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                      b.type_name() + "'");
}

bool py_contains(const Value& container, const Value& needle) {
  switch (container.kind()) {
    case Kind::String:
      if (!needle.is_string())
        throw TemplateError(std::string("'in <string>' requires string as left operand, not ") + needle.type_name());
      return container.str().find(needle.str()) != std::string::npos;
    case Kind::List:
      for (const Value& v : container.items())
        if (py_equal(v, needle)) return true;
      return false;
    case Kind::Dict: return needle.is_string() && container.dict_ref().find(needle.str()) != nullptr;
    case Kind::Undefined: return false;  // Jinja's Undefined iterates as empty
    default:
      throw TemplateError(std::string("argument of type '") + container.type_name() + "' is not iterable");
  }
}

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> values;
  if (args.is_tuple()) values = args.items();
  else values.push_back(args);
  const Dict* mapping = args.is_dict() ? &args.dict_ref() : nullptr;
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw TemplateError("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos || !mapping) throw TemplateError("format requires a mapping");
      arg = mapping->find(fmt.substr(i + 1, close - i - 1));
      if (!arg) throw TemplateError("format key '" + fmt.substr(i + 1, close - i - 1) + "' not found");
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0.123456789").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    if (i >= fmt.size()) throw TemplateError("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!arg) {
      if (next >= values.size()) throw TemplateError("not enough arguments for format string");
      arg = &values[next++];
    }
    char buf[64];
    std::string spec = "%" + flags;
    switch (conv) {
      case 's': {
        std::string s = py_str(*arg);
        size_t width = static_cast<size_t>(std::atoi(flags.c_str() + flags.find_first_not_of("-+ #0")));
        if (flags.find_first_not_of("-+ #0") == std::string::npos) width = 0;
        size_t len = s.size();
        if (len < width && flags.find('-') != std::string::npos) s += std::string(width - len, ' ');
        else if (len < width) s = std::string(width - len, ' ') + s;
        out += s;
        break;
      }
      case 'r': out += py_repr(*arg); break;
      case 'd':
      case 'i':
        if (!arg->is_number()) throw TemplateError(std::string("%d format: a real number is required, not ") + arg->type_name());
        std::snprintf(buf, sizeof buf, (spec + "lld").c_str(),
                      static_cast<long long>(arg->kind() == Kind::Float ? std::trunc(arg->as_float()) : arg->to_int()));
        out += buf;
        break;
      case 'f':
      case 'e':
      case 'g':
        if (!arg->is_number()) throw TemplateError(std::string("must be real number, not ") + arg->type_name());
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), arg->to_double());
        out += buf;
        break;
      case 'x':
      case 'X':
      case 'o':
        if (!arg->is_number() || arg->kind() == Kind::Float)
          throw TemplateError(std::string("%x format: an integer is required, not ") + arg->type_name());
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), static_cast<long long>(arg->to_int()));
        out += buf;
        break;
      default: throw TemplateError(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (!mapping && next < values.size()) throw TemplateError("not all arguments converted during string formatting");
  return out;
}

}  // namespace strata::jinja
