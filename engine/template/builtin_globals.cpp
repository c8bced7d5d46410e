// The global functions a chat template can call: Jinja's range, namespace and dict, and the two that
// transformers adds, raise_exception (the template rejects the conversation) and strftime_now.
#include <ctime>
#include <unordered_map>

#include "engine/template/builtins.hpp"
#include "engine/template/chat_template.hpp"
#include "engine/template/interpreter.hpp"
#include "engine/template/python_text.hpp"

namespace strata::jinja {
namespace {

Value g_raise_exception(Interpreter&, CallArgs& a) {
  Params p("raise_exception", a, {"message"});
  throw TemplateRaise(p.get(0) ? py_str(*p.get(0)) : std::string("raise_exception() called"));
}

Value g_range(Interpreter& in, CallArgs& a) {
  if (!a.keyword.empty()) throw TemplateError("range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : a.positional) {
    if (!(v.is_int() || v.kind() == Kind::Bool))
      throw TemplateError(std::string("range(): '") + v.type_name() + "' object cannot be interpreted as an integer");
    n.push_back(v.to_int());
  }
  if (n.empty() || n.size() > 3) throw TemplateError("range() expects 1 to 3 integer arguments");
  int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
  if (step == 0) throw TemplateError("range() arg 3 must not be zero");
  // The sandbox bounds range() too, so `range(10**12)` is refused rather than materialized.
  __int128 count = step > 0 ? (stop > start ? (static_cast<__int128>(stop) - start + step - 1) / step : 0)
                            : (start > stop ? (static_cast<__int128>(start) - stop - step - 1) / -step : 0);
  if (count > in.size_limits().max_list_items)
    throw TemplateError("range() of " + std::to_string(static_cast<long long>(count)) +
                        " items exceeds the loop iteration limit");
  List out;
  out.reserve(static_cast<size_t>(count));
  for (__int128 i = 0; i < count; ++i) out.emplace_back(static_cast<int64_t>(start + i * step));
  return Value::list(std::move(out));
}

std::shared_ptr<Dict> collect_entries(const char* fn, CallArgs& a) {
  auto d = std::make_shared<Dict>();
  if (a.positional.size() > 1) throw TemplateError(std::string(fn) + "() takes at most one positional argument");
  if (!a.positional.empty()) {
    const Value& init = a.positional[0];
    if (init.is_mapping_like()) {
      const Dict& src = init.is_dict() ? init.dict_ref() : init.ns_ref();
      d->entries = src.entries;
    } else if (init.is_list()) {
      for (const Value& pair : init.items()) {
        if (!pair.is_list() || pair.items().size() != 2 || !pair.items()[0].is_string())
          throw TemplateError(std::string(fn) + "(): each element must be a (str, value) pair");
        d->set(pair.items()[0].str(), pair.items()[1]);
      }
    } else {
      throw TemplateError(std::string(fn) + "(): cannot build a mapping from '" + init.type_name() + "'");
    }
  }
  for (auto& [k, v] : a.keyword) d->set(k, v);
  return d;
}

Value g_namespace(Interpreter& in, CallArgs& a) {
  auto attrs = collect_entries("namespace", a);
  in.track_namespace(attrs);
  return Value::ns(std::move(attrs));
}
Value g_dict(Interpreter&, CallArgs& a) { return Value::dict(collect_entries("dict", a)); }

Value g_strftime_now(Interpreter&, CallArgs& a) {
  Params p("strftime_now", a, {"format"});
  std::string fmt = p.string(0, "");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (fmt.empty()) return Value("");
  std::string buf(256 + fmt.size() * 8, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &local);
  buf.resize(n);
  return Value(std::move(buf));
}

Value make(const char* name, Value (*fn)(Interpreter&, CallArgs&)) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->fn = fn;
  return Value::callable(std::move(c));
}

}  // namespace

const Value* find_global(const std::string& name) {
  static const std::unordered_map<std::string, Value> globals = {
      {"raise_exception", make("raise_exception", g_raise_exception)},
      {"range", make("range", g_range)},
      {"namespace", make("namespace", g_namespace)},
      {"dict", make("dict", g_dict)},
      {"strftime_now", make("strftime_now", g_strftime_now)},
  };
  auto it = globals.find(name);
  return it == globals.end() ? nullptr : &it->second;
}

}  // namespace strata::jinja
