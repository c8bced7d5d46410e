// Python methods that chat templates call on values: str methods (strip, split, startswith, format...),
// dict.get/items/keys/values and loop.cycle. transformers renders in an immutable sandbox, so methods
// that would mutate a list or dict are refused with the sandbox's message, as Python refuses them.
#include <cctype>
#include <unordered_set>

#include "engine/template/builtins.hpp"
#include "engine/template/chat_template.hpp"
#include "engine/template/interpreter.hpp"
#include "engine/template/operators.hpp"
#include "engine/template/python_text.hpp"
#include "engine/template/string_ops.hpp"
#include "engine/template/unicode_text.hpp"

namespace strata::jinja {
namespace {

std::optional<std::string> opt_str(const Params& p, size_t i) {
  const Value* v = p.get(i);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string())
    throw TemplateError(std::string(p.function()) + "() argument must be str or None, not " + v->type_name());
  return v->str();
}

Value string_list(std::vector<std::string> parts) {
  List out;
  out.reserve(parts.size());
  for (auto& s : parts) out.emplace_back(std::move(s));
  return Value::list(std::move(out));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* fn) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) throw TemplateError(std::string(fn) + " first arg must be str or a tuple of str, not " + a.type_name());
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.items())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

// str.format with automatic ({}) or explicit ({0}, {name}) fields, and !r / !s conversions.
std::string py_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw TemplateError("format: single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw TemplateError("format: single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 0;
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) throw TemplateError("format: format specs are not supported");
    const Value* arg = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size()) throw TemplateError("format: replacement index out of range");
      arg = &args.positional[auto_index++];
    } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t idx = std::stoul(field);
      if (idx >= args.positional.size()) throw TemplateError("format: replacement index out of range");
      arg = &args.positional[idx];
    } else {
      arg = args.kwarg(field);
      if (!arg) throw TemplateError("format: missing argument '" + field + "'");
    }
    out += conversion == 'r' ? py_repr(*arg) : py_str(*arg);
  }
  return out;
}

bool all_chars(const std::string& s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(static_cast<unsigned char>(c))) return false;
  return true;
}

bool string_method(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a, Value& r) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Params p(name.c_str(), a, {"chars"});
    r = Value(py_strip(s, opt_str(p, 0), name != "rstrip", name != "lstrip"));
  } else if (name == "split" || name == "rsplit") {
    Params p(name.c_str(), a, {"sep", "maxsplit"});
    std::optional<std::string> sep = opt_str(p, 0);
    if (sep && sep->empty()) throw TemplateError("split(): empty separator");
    long maxsplit = static_cast<long>(p.integer(1, -1));
    r = string_list(name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
  } else if (name == "splitlines") {
    Params p("splitlines", a, {"keepends"});
    r = string_list(py_splitlines(s, p.flag(0, false)));
  } else if (name == "startswith" || name == "endswith") {
    Params p(name.c_str(), a, {"prefix"});
    if (!p.get(0)) throw TemplateError(name + "() takes at least 1 argument");
    r = Value(affix_match(s, *p.get(0), name == "startswith", name.c_str()));
  } else if (name == "upper") {
    Params p("upper", a, {});
    r = Value(py_upper(s));
  } else if (name == "lower") {
    Params p("lower", a, {});
    r = Value(py_lower(s));
  } else if (name == "title") {
    Params p("title", a, {});
    r = Value(py_title(s));
  } else if (name == "capitalize") {
    Params p("capitalize", a, {});
    r = Value(py_capitalize(s));
  } else if (name == "replace") {
    Params p("replace", a, {"old", "new", "count"});
    if (!p.get(0) || !p.get(1)) throw TemplateError("replace() takes at least 2 arguments");
    std::string out = py_replace(s, p.string(0, ""), p.string(1, ""), static_cast<long>(p.integer(2, -1)));
    if (out.size() > in.size_limits().max_string_bytes) throw TemplateError("replace: result exceeds the output size limit");
    r = Value(std::move(out));
  } else if (name == "format") {
    r = Value(py_format(s, a));
  } else if (name == "join") {
    Params p("join", a, {"iterable"});
    if (!p.get(0)) throw TemplateError("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& item : in.to_list(*p.get(0))) {
      if (!item.is_string()) throw TemplateError(std::string("sequence item: expected str instance, ") + item.type_name() + " found");
      if (!first) out += s;
      first = false;
      out += item.str();
    }
    r = Value(std::move(out));
  } else if (name == "find" || name == "rfind" || name == "count") {
    Params p(name.c_str(), a, {"sub"});
    std::string sub = p.string(0, "");
    if (name == "count") {
      int64_t n = 0;
      if (sub.empty()) n = static_cast<int64_t>(utf8_length(s)) + 1;
      else
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      r = Value(n);
    } else {
      size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
      r = Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_length(s.substr(0, at))));
    }
  } else if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
             name == "isupper" || name == "islower") {
    Params p(name.c_str(), a, {});
    if (name == "isdigit") r = Value(all_chars(s, std::isdigit));
    else if (name == "isalpha") r = Value(all_chars(s, std::isalpha));
    else if (name == "isalnum") r = Value(all_chars(s, std::isalnum));
    else if (name == "isspace") r = Value(all_chars(s, std::isspace));
    else {
      bool upper = name == "isupper", cased = false, ok = true;
      for (char c : s) {
        if (std::isupper(static_cast<unsigned char>(c))) ok = ok && upper, cased = true;
        if (std::islower(static_cast<unsigned char>(c))) ok = ok && !upper, cased = true;
      }
      r = Value(ok && cased);
    }
  } else {
    return false;
  }
  return true;
}

bool dict_method(const Dict& d, const std::string& name, CallArgs& a, Value& r) {
  if (name == "get") {
    Params p("get", a, {"key", "default"});
    if (!p.get(0)) throw TemplateError("get() takes at least 1 argument");
    const Value* v = p.get(0)->is_string() ? d.find(p.get(0)->str()) : nullptr;
    r = v ? *v : p.get_or(1, Value::none());
  } else if (name == "items" || name == "keys" || name == "values") {
    Params p(name.c_str(), a, {});
    List out;
    out.reserve(d.entries.size());
    for (const auto& [k, v] : d.entries) {
      if (name == "items") out.push_back(Value::list({Value(k), v}, true));
      else if (name == "keys") out.emplace_back(k);
      else out.push_back(v);
    }
    r = Value::list(std::move(out));
  } else {
    return false;
  }
  return true;
}

[[noreturn]] void refuse(const std::string& name, const Value& obj) {
  throw TemplateError("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
}

}  // namespace

namespace {
const std::unordered_set<std::string> list_mutators = {"append", "extend", "insert", "pop", "remove",
                                                       "clear", "sort", "reverse"};
const std::unordered_set<std::string> dict_mutators = {"update", "pop", "popitem", "setdefault", "clear"};
const std::unordered_set<std::string> string_methods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
    "title", "capitalize", "replace", "format", "join", "find", "rfind", "count", "isdigit", "isalpha",
    "isalnum", "isspace", "isupper", "islower"};
const std::unordered_set<std::string> dict_methods = {"get", "items", "keys", "values"};
const std::unordered_set<std::string> list_methods = {"index", "count"};
}  // namespace

// Attribute lookups on dicts (message.role, tool.function) are the hottest path of a chat template:
// compare against the few dict method names directly instead of hashing.
bool is_dict_attribute_method(const std::string& name) {
  static const char* const names[] = {"get", "pop", "keys", "items", "clear", "values", "update", "popitem",
                                      "setdefault"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

std::optional<Value> method_attribute(const Value& obj, const std::string& name) {
  if (obj.is_dict() && !is_dict_attribute_method(name)) return std::nullopt;
  const std::unordered_set<std::string>* methods = nullptr;
  const std::unordered_set<std::string>* mutators = nullptr;
  switch (obj.kind()) {
    case Kind::String: methods = &string_methods; break;
    case Kind::Dict: methods = &dict_methods, mutators = &dict_mutators; break;
    case Kind::List: methods = &list_methods, mutators = &list_mutators; break;
    default: return std::nullopt;
  }
  if (mutators && mutators->count(name))
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
  if (!methods->count(name)) return std::nullopt;
  auto bound = std::make_shared<Callable>();
  bound->name = std::string(obj.type_name()) + "." + name;
  Value self = obj;
  bound->fn = [self, name](Interpreter& in, CallArgs& args) {
    Value result;
    call_method(in, self, name, args, result);
    return result;
  };
  return Value::callable(std::move(bound));
}

bool call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args, Value& result) {
  switch (obj.kind()) {
    case Kind::String: return string_method(in, obj.str(), name, args, result);
    case Kind::Dict:
      if (dict_mutators.count(name)) refuse(name, obj);
      return dict_method(obj.dict_ref(), name, args, result);
    case Kind::List:
      if (list_mutators.count(name)) refuse(name, obj);
      if (name == "index" || name == "count") {
        Params p(name.c_str(), args, {"value"});
        if (!p.get(0)) throw TemplateError(name + "() takes exactly one argument");
        int64_t n = 0;
        const List& items = obj.items();
        for (size_t i = 0; i < items.size(); ++i) {
          if (!py_equal(items[i], *p.get(0))) continue;
          if (name == "index") {
            result = Value(static_cast<int64_t>(i));
            return true;
          }
          ++n;
        }
        if (name == "index") throw TemplateError(py_repr(*p.get(0)) + " is not in list");
        result = Value(n);
        return true;
      }
      return false;
    case Kind::Loop:
      if (name == "cycle") {
        if (args.positional.empty()) throw TemplateError("no items for cycling given");
        const LoopInfo& l = obj.loop_ref();
        result = args.positional[l.index0 % args.positional.size()];
        return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace strata::jinja
