// Jinja's built-in filters as Jinja 3.1 defines them, plus transformers' own tojson (json.dumps with
// ensure_ascii=False and indent/separators/sort_keys passed through, no HTML escaping).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "engine/template/builtins.hpp"
#include "engine/template/chat_template.hpp"
#include "engine/template/interpreter.hpp"
#include "engine/template/operators.hpp"
#include "engine/template/python_text.hpp"
#include "engine/template/string_ops.hpp"
#include "engine/template/unicode_text.hpp"

namespace strata::jinja {
namespace {

std::optional<std::string> opt_string(const Params& p, size_t i) {
  const Value* v = p.get(i);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string())
    throw TemplateError(std::string(p.function()) + ": argument must be a string, not " + v->type_name());
  return v->str();
}

// Jinja's attribute getter for filters: "a.b" walks items, integer parts index lists.
Value get_attribute_path(Interpreter& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(c); });
    cur = in.getitem(cur, digits ? Value(static_cast<int64_t>(std::atoll(part.c_str()))) : Value(part));
    if (dot == std::string::npos) return cur;
    if (cur.is_undefined()) return cur;
    start = dot + 1;
  }
}

int64_t py_len(const Value& v, const char* what) {
  switch (v.kind()) {
    case Kind::Undefined: return 0;
    case Kind::String: return static_cast<int64_t>(utf8_length(v.str()));
    case Kind::List: return static_cast<int64_t>(v.items().size());
    case Kind::Dict: return static_cast<int64_t>(v.dict_ref().entries.size());
    default: throw TemplateError(std::string(what) + ": object of type '" + v.type_name() + "' has no len()");
  }
}

Value f_length(Interpreter&, const Value& v, CallArgs& a) {
  Params p("length", a, {});
  return Value(py_len(v, "length"));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("join", a, {"d", "attribute"});
  std::string sep = p.get(0) ? py_str(*p.get(0)) : "";
  std::optional<std::string> attr = opt_string(p, 1);
  std::string out;
  bool first = true;
  for (const Value& item : in.to_list(v)) {
    if (!first) out += sep;
    first = false;
    py_str_append(out, attr ? get_attribute_path(in, item, *attr) : item);
    if (out.size() > in.size_limits().max_string_bytes) throw TemplateError("join: result exceeds the output size limit");
  }
  return Value(std::move(out));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& a) {
  Params p("upper", a, {});
  return Value(py_upper(py_str(v)));
}
Value f_lower(Interpreter&, const Value& v, CallArgs& a) {
  Params p("lower", a, {});
  return Value(py_lower(py_str(v)));
}
Value f_capitalize(Interpreter&, const Value& v, CallArgs& a) {
  Params p("capitalize", a, {});
  return Value(py_capitalize(py_str(v)));
}
Value f_title(Interpreter&, const Value& v, CallArgs& a) {
  Params p("title", a, {});
  return Value(jinja_title(py_str(v)));
}
Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  Params p("trim", a, {"chars"});
  return Value(py_strip(py_str(v), opt_string(p, 0), true, true));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("replace", a, {"old", "new", "count"});
  if (!p.get(0) || !p.get(1)) throw TemplateError("replace() needs the old and new strings");
  std::string out = py_replace(py_str(v), py_str(*p.get(0)), py_str(*p.get(1)), p.integer(2, -1));
  if (out.size() > in.size_limits().max_string_bytes) throw TemplateError("replace: result exceeds the output size limit");
  return Value(std::move(out));
}

Value f_first(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("first", a, {});
  if (v.is_list()) return v.items().empty() ? Value::undefined("No first item, sequence was empty.") : v.items().front();
  List items = in.to_list(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("last", a, {});
  if (v.is_list()) return v.items().empty() ? Value::undefined("No last item, sequence was empty.") : v.items().back();
  List items = in.to_list(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_list(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("list", a, {});
  return Value::list(in.to_list(v));
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
  Params p("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = p.flag(0, false);
  if (const Value* indent = p.get(1); indent && !indent->is_none()) {
    if (indent->is_string()) o.indent = indent->str();
    else if (indent->is_int()) o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent->as_int())), ' ');
    else throw TemplateError("tojson: indent must be an integer or a string");
    o.item_separator = ",";
  }
  if (const Value* sep = p.get(2); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->items().size() != 2 || !sep->items()[0].is_string() || !sep->items()[1].is_string())
      throw TemplateError("tojson: separators must be a pair of strings");
    o.item_separator = sep->items()[0].str();
    o.key_separator = sep->items()[1].str();
  }
  o.sort_keys = p.flag(3, false);
  return Value(json_dumps(v, o));
}

Value f_string(Interpreter&, const Value& v, CallArgs& a) {
  Params p("string", a, {});
  return v.is_string() ? v : Value(py_str(v));
}

// Python's int(str, base): optional sign, underscores between digits, surrounding whitespace.
bool parse_py_int(const std::string& text, int base, int64_t& out) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string digits;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) digits += s[i++];
  if (base == 16 && s.compare(i, 2, "0x") == 0) i += 2;
  bool last_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && last_digit) {
      last_digit = false;
      continue;
    }
    digits += s[i];
    last_digit = true;
  }
  if (digits.empty() || digits == "+" || digits == "-" || !last_digit) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE) return false;
  out = v;
  return true;
}

bool parse_py_float(const std::string& text, double& out) {
  std::string s = py_strip(text, std::nullopt, true, true);
  if (s.empty()) return false;
  std::string lower = py_lower(s);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  if (*end != '\0') return false;
  // strtod accepts hex floats, Python's float() does not.
  return lower.find("0x") == std::string::npos;
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  Params p("int", a, {"default", "base"});
  Value fallback = p.get_or(0, Value(int64_t{0}));
  int base = static_cast<int>(p.integer(1, 10));
  if (v.is_string()) {
    int64_t i;
    if (parse_py_int(v.str(), base, i)) return Value(i);
    double d;
    if (parse_py_float(v.str(), d) && std::isfinite(d)) return Value(static_cast<int64_t>(d));
    return fallback;
  }
  if (v.kind() == Kind::Float) return std::isfinite(v.as_float()) ? Value(static_cast<int64_t>(v.as_float())) : fallback;
  if (v.is_int() || v.kind() == Kind::Bool) return Value(v.to_int());
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  Params p("float", a, {"default"});
  Value fallback = p.get_or(0, Value(0.0));
  if (v.is_string()) {
    double d;
    return parse_py_float(v.str(), d) ? Value(d) : fallback;
  }
  if (v.is_number()) return Value(v.to_double());
  return fallback;
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  Params p("default", a, {"default_value", "boolean"});
  bool boolean = p.flag(1, false);
  if (v.is_undefined() || (boolean && !v.truthy())) return p.get_or(0, Value(""));
  return v;
}

Value f_items(Interpreter&, const Value& v, CallArgs& a) {
  Params p("items", a, {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw TemplateError("items: can only get item pairs from a mapping");
  List out;
  for (const auto& [k, val] : v.dict_ref().entries) out.push_back(Value::list({Value(k), val}, true));
  return Value::list(std::move(out));
}

// select/reject/selectattr/rejectattr share this: positional args after the optional attribute name
// are the test name and its arguments; without a test the item's truthiness decides.
Value select_impl(Interpreter& in, const Value& v, CallArgs& a, bool want, bool by_attr, const char* name) {
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.positional.empty() || !a.positional[0].is_string())
      throw TemplateError(std::string(name) + ": the attribute name must be a string");
    attr = a.positional[0].str();
    next = 1;
  }
  std::string test;
  if (next < a.positional.size()) {
    if (!a.positional[next].is_string()) throw TemplateError(std::string(name) + ": the test name must be a string");
    test = a.positional[next].str();
    ++next;
  }
  CallArgs test_args;
  test_args.positional.assign(a.positional.begin() + static_cast<long>(std::min(next, a.positional.size())),
                              a.positional.end());
  test_args.keyword = a.keyword;
  List out;
  for (const Value& item : in.to_list(v)) {
    Value subject = by_attr ? get_attribute_path(in, item, attr) : item;
    bool ok = test.empty() ? subject.truthy() : in.apply_test(test, subject, test_args);
    if (ok == want) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false, "select"); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false, "reject"); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, true, "selectattr");
}
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, true, "rejectattr");
}

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  List out;
  if (const Value* attr = a.kwarg("attribute")) {
    if (!attr->is_string()) throw TemplateError("map: attribute must be a string");
    const Value* fallback = a.kwarg("default");
    for (const auto& [k, val] : a.keyword)
      if (k != "attribute" && k != "default") throw TemplateError("map: unexpected keyword argument '" + k + "'");
    for (const Value& item : in.to_list(v)) {
      Value got = get_attribute_path(in, item, attr->str());
      out.push_back(got.is_undefined() && fallback ? *fallback : got);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string())
    throw TemplateError("map: needs a filter name or attribute=...");
  std::string filter = a.positional[0].str();
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : in.to_list(v)) {
    CallArgs args = rest;
    out.push_back(in.apply_filter(filter, item, args));
  }
  return Value::list(std::move(out));
}

Value sort_key(Interpreter& in, const Value& item, const std::optional<std::string>& attr, bool case_sensitive) {
  Value key = attr ? get_attribute_path(in, item, *attr) : item;
  if (!case_sensitive && key.is_string()) return Value(py_lower(key.str()));
  return key;
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("unique", a, {"case_sensitive", "attribute"});
  bool cs = p.flag(0, false);
  std::optional<std::string> attr = opt_string(p, 1);
  List out, seen;
  for (const Value& item : in.to_list(v)) {
    Value key = sort_key(in, item, attr, cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || py_equal(s, key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("sort", a, {"reverse", "case_sensitive", "attribute"});
  bool reverse = p.flag(0, false), cs = p.flag(1, false);
  std::optional<std::string> attr = opt_string(p, 2);
  List items = in.to_list(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) keyed.emplace_back(sort_key(in, items[i], attr, cs), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
  List out;
  for (const auto& [k, i] : keyed) out.push_back(items[i]);
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
  Params p("dictsort", a, {"case_sensitive", "by", "reverse"});
  bool cs = p.flag(0, false), reverse = p.flag(2, false);
  std::string by = p.string(1, "key");
  if (by != "key" && by != "value") throw TemplateError("dictsort: 'by' must be 'key' or 'value'");
  if (!v.is_dict()) throw TemplateError(std::string("dictsort: expected a mapping, got ") + v.type_name());
  std::vector<std::pair<std::string, Value>> entries = v.dict_ref().entries;
  auto key = [&](const std::pair<std::string, Value>& e) {
    Value k = by == "key" ? Value(e.first) : e.second;
    return !cs && k.is_string() ? Value(py_lower(k.str())) : k;
  };
  std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_less(key(y), key(x)) : py_less(key(x), key(y));
  });
  List out;
  for (auto& [k, val] : entries) out.push_back(Value::list({Value(k), val}, true));
  return Value::list(std::move(out));
}

Value f_reverse(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("reverse", a, {});
  if (v.is_string()) {
    auto cps = utf8_decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value(utf8_encode(cps, 0, cps.size()));
  }
  List items = in.to_list(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_safe(Interpreter&, const Value& v, CallArgs& a) {
  Params p("safe", a, {});
  return v.is_string() ? v : Value(py_str(v));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& a) {
  Params p("indent", a, {"width", "first", "blank"});
  std::string indention;
  if (const Value* w = p.get(0); w && w->is_string()) indention = w->str();
  else indention = std::string(static_cast<size_t>(std::max<int64_t>(0, p.integer(0, 4))), ' ');
  bool first = p.flag(1, false), blank = p.flag(2, false);
  std::vector<std::string> lines = py_splitlines(py_str(v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (blank || !lines[i].empty()) out += indention;
    }
    out += lines[i];
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  Params p("round", a, {"precision", "method"});
  int64_t precision = p.integer(0, 0);
  std::string method = p.string(1, "common");
  if (!v.is_number()) throw TemplateError(std::string("round: expected a number, got ") + v.type_name());
  if (method != "common" && method != "ceil" && method != "floor")
    throw TemplateError("round: method must be 'common', 'ceil' or 'floor'");
  if (method == "common") {
    if (v.kind() != Kind::Float) return Value(v.to_int());  // Python's round(int, n) stays an int
    double x = v.as_float();
    if (!std::isfinite(x) || precision > 300) return Value(x);
    if (precision >= 0) {
      // printf rounds the exact binary value half-to-even, as CPython's round() does.
      char buf[400];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
      return Value(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value(std::nearbyint(x / scale) * scale);
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.to_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_abs(Interpreter&, const Value& v, CallArgs& a) {
  Params p("abs", a, {});
  if (v.kind() == Kind::Float) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.kind() == Kind::Bool) {
    if (v.to_int() == INT64_MIN) throw TemplateError("abs: integer overflow");
    return Value(v.to_int() < 0 ? -v.to_int() : v.to_int());
  }
  throw TemplateError(std::string("bad operand type for abs(): '") + v.type_name() + "'");
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& a) {
  Params p("wordcount", a, {});
  int64_t count = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(py_str(v))) {
    bool word = is_py_word_char(c);
    if (word && !in_word) ++count;
    in_word = word;
  }
  return Value(count);
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("sum", a, {"attribute", "start"});
  std::optional<std::string> attr = opt_string(p, 0);
  Value total = p.get_or(1, Value(int64_t{0}));
  for (const Value& item : in.to_list(v))
    total = binary_op("+", total, attr ? get_attribute_path(in, item, *attr) : item, in.size_limits());
  return total;
}

Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool want_max, const char* name) {
  Params p(name, a, {"case_sensitive", "attribute"});
  bool cs = p.flag(0, false);
  std::optional<std::string> attr = opt_string(p, 1);
  List items = in.to_list(v);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  Value best_key = sort_key(in, items[0], attr, cs);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = sort_key(in, items[i], attr, cs);
    if (want_max ? py_less(best_key, k) : py_less(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false, "min"); }
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true, "max"); }

Value f_escape(Interpreter&, const Value& v, CallArgs& a) {
  Params p("escape", a, {});
  std::string out;
  for (char c : py_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value f_format(Interpreter&, const Value& v, CallArgs& a) {
  if (!a.positional.empty() && !a.keyword.empty())
    throw TemplateError("format: cannot mix positional and keyword arguments");
  if (!a.keyword.empty()) {
    auto d = std::make_shared<Dict>();
    for (const auto& [k, val] : a.keyword) d->set(k, val);
    return Value(percent_format(py_str(v), Value::dict(d)));
  }
  return Value(percent_format(py_str(v), Value::list(a.positional, true)));
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& a) {
  Params p("attr", a, {"name"});
  return in.getattr(v, p.string(0, ""));
}

Value f_center(Interpreter&, const Value& v, CallArgs& a) {
  Params p("center", a, {"width"});
  std::string s = py_str(v);
  int64_t width = p.integer(0, 80), len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value(s);
  int64_t total = width - len, left = total / 2 + (total & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(total - left), ' '));
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  static const std::unordered_map<std::string, FilterFn> filters = {
      {"length", f_length},       {"count", f_length},   {"join", f_join},
      {"upper", f_upper},         {"lower", f_lower},    {"capitalize", f_capitalize},
      {"title", f_title},         {"trim", f_trim},      {"replace", f_replace},
      {"first", f_first},         {"last", f_last},      {"list", f_list},
      {"tojson", f_tojson},       {"string", f_string},  {"int", f_int},
      {"float", f_float},         {"default", f_default}, {"d", f_default},
      {"items", f_items},         {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr},
      {"map", f_map},             {"select", f_select},  {"reject", f_reject},
      {"unique", f_unique},       {"sort", f_sort},      {"dictsort", f_dictsort},
      {"reverse", f_reverse},     {"safe", f_safe},      {"indent", f_indent},
      {"round", f_round},         {"abs", f_abs},        {"wordcount", f_wordcount},
      {"sum", f_sum},             {"min", f_min},        {"max", f_max},
      {"escape", f_escape},       {"e", f_escape},       {"forceescape", f_escape},
      {"format", f_format},       {"attr", f_attr},      {"center", f_center},
  };
  auto it = filters.find(name);
  return it == filters.end() ? nullptr : it->second;
}

}  // namespace strata::jinja
