#include "engine/template/python_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/template/chat_template.hpp"
#include "engine/template/unicode_text.hpp"

namespace strata::jinja {
namespace {

void append_hex(std::string& out, unsigned v, int digits) {
  static const char* hex = "0123456789abcdef";
  for (int d = digits - 1; d >= 0; --d) out += hex[(v >> (4 * d)) & 0xf];
}

// CPython's str.isprintable() is false for controls, separators other than space, and format characters;
// repr() escapes exactly those. This covers the ranges that occur in text.
bool py_printable(char32_t c) {
  if (c < 0x20 || c == 0x7f) return false;
  if (c >= 0x80 && c <= 0xa0) return false;
  if (c == 0xad || c == 0x1680 || c == 0x3000 || c == 0xfeff) return false;
  if (c >= 0x2000 && c <= 0x200f) return false;
  if (c >= 0x2028 && c <= 0x202f) return false;
  if (c >= 0x205f && c <= 0x2064) return false;
  if (c >= 0xd800 && c <= 0xdfff) return false;
  return true;
}

void repr_append(std::string& out, const Value& v);

void dict_repr_append(std::string& out, const Dict& d) {
  ValueNestingGuard guard;
  out += '{';
  bool first = true;
  for (const auto& [k, val] : d.entries) {
    if (!first) out += ", ";
    first = false;
    out += string_repr(k);
    out += ": ";
    repr_append(out, val);
  }
  out += '}';
}

void repr_append(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::String: out += string_repr(v.str()); return;
    case Kind::List: {
      ValueNestingGuard guard;
      const List& items = v.items();
      out += v.is_tuple() ? '(' : '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        repr_append(out, items[i]);
      }
      if (v.is_tuple() && items.size() == 1) out += ',';
      out += v.is_tuple() ? ')' : ']';
      return;
    }
    case Kind::Dict: dict_repr_append(out, v.dict_ref()); return;
    case Kind::Undefined: out += "Undefined"; return;
    default: py_str_append(out, v);
  }
}

}  // namespace

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // Shortest digit string that reads back as the same double: what Python's repr() prints.
  char buf[40];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s(buf);
  bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  size_t e_pos = s.find('e');
  int exponent = std::atoi(s.c_str() + e_pos + 1);
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ebuf;
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out += digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  }
  return out;
}

std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (py_printable(c)) {
      utf8_append(out, c);
    } else if (c < 0x100) {
      out += "\\x";
      append_hex(out, c, 2);
    } else {
      out += "\\u";
      append_hex(out, c, 4);
    }
  }
  out += quote;
  return out;
}

void py_str_append(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined: return;
    case Kind::None: out += "None"; return;
    case Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
    case Kind::Int: out += std::to_string(v.as_int()); return;
    case Kind::Float: out += float_repr(v.as_float()); return;
    case Kind::String: out += v.str(); return;
    case Kind::List:
    case Kind::Dict: repr_append(out, v); return;
    case Kind::Namespace:
      out += "<Namespace ";
      dict_repr_append(out, v.ns_ref());
      out += '>';
      return;
    case Kind::Loop: out += "<LoopContext>"; return;
    case Kind::Callable: out += "<function " + v.callable_ref().name + ">"; return;
  }
}

std::string py_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  py_str_append(out, v);
  return out;
}

std::string py_repr(const Value& v) {
  std::string out;
  repr_append(out, v);
  return out;
}

namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  auto escape_control = [&](char32_t c) {
    switch (c) {
      case '"': out += "\\\""; return true;
      case '\\': out += "\\\\"; return true;
      case '\n': out += "\\n"; return true;
      case '\r': out += "\\r"; return true;
      case '\t': out += "\\t"; return true;
      case '\b': out += "\\b"; return true;
      case '\f': out += "\\f"; return true;
      default:
        if (c < 0x20) {
          out += "\\u";
          append_hex(out, c, 4);
          return true;
        }
        return false;
    }
  };
  if (!ensure_ascii) {
    for (char ch : s) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (!escape_control(c)) out += ch;
    }
  } else {
    for (char32_t c : utf8_decode(s)) {
      if (escape_control(c)) continue;
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if (c < 0x10000) {
        out += "\\u";
        append_hex(out, c, 4);
      } else {
        char32_t v = c - 0x10000;
        out += "\\u";
        append_hex(out, 0xd800 + (v >> 10), 4);
        out += "\\u";
        append_hex(out, 0xdc00 + (v & 0x3ff), 4);
      }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  ValueNestingGuard guard;
  auto newline = [&](int lvl) {
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *o.indent;
  };
  switch (v.kind()) {
    case Kind::None: out += "null"; return;
    case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Kind::Int: out += std::to_string(v.as_int()); return;
    case Kind::Float: {
      double x = v.as_float();
      if (std::isnan(x)) out += "NaN";
      else if (std::isinf(x)) out += x < 0 ? "-Infinity" : "Infinity";
      else out += float_repr(x);
      return;
    }
    case Kind::String: json_string(out, v.str(), o.ensure_ascii); return;
    case Kind::List: {
      const List& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.indent) newline(level + 1);
        json_value(out, items[i], o, level + 1);
      }
      if (o.indent) newline(level);
      out += ']';
      return;
    }
    case Kind::Dict: {
      const Dict& d = v.dict_ref();
      if (d.entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : d.entries) entries.push_back(&e);
      if (o.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.indent) newline(level + 1);
        json_string(out, entries[i]->first, o.ensure_ascii);
        out += o.key_separator;
        json_value(out, entries[i]->second, o, level + 1);
      }
      if (o.indent) newline(level);
      out += '}';
      return;
    }
    default:
      throw TemplateError(std::string("tojson: Object of type ") + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  json_value(out, v, options, 0);
  return out;
}

}  // namespace strata::jinja
