#include "server/openai/generation_options.hpp"

#include <climits>
#include <cstdlib>

#include "server/openai/errors.hpp"
#include "server/openai/fields.hpp"

namespace strata {

int RequestLimits::max_tokens() const {
  if (max_tokens_limit > 0) return max_tokens_limit;
  if (max_context > 0) return max_context;
  return INT32_MAX;
}

namespace {

int64_t token_upper(const RequestLimits& limits) {
  return limits.vocab_size > 0 ? limits.vocab_size - 1 : INT32_MAX;
}

std::vector<std::string> parse_stop(const Fields& f, const RequestLimits& limits) {
  std::vector<std::string> out;
  const nlohmann::json* v = f.get("stop");
  if (!v) return out;
  std::string path = f.name("stop");
  auto take = [&](const nlohmann::json& s, const std::string& p) {
    if (!s.is_string()) throw_invalid(p, qname(p) + " must be a string, got " + json_kind(s), "invalid_type");
    const std::string& str = s.get_ref<const std::string&>();
    if (str.empty()) throw_invalid(p, qname(p) + " must not be an empty string");
    if (str.size() > limits.max_stop_bytes)
      throw_invalid(p, qname(p) + " is longer than the limit of " + std::to_string(limits.max_stop_bytes) + " bytes");
    out.push_back(str);
  };
  if (v->is_string()) {
    take(*v, path);
  } else if (v->is_array()) {
    if (static_cast<int>(v->size()) > limits.max_stop_strings)
      throw_invalid(path, qname(path) + " has " + std::to_string(v->size()) + " strings; the limit is " +
                              std::to_string(limits.max_stop_strings));
    for (size_t i = 0; i < v->size(); ++i) take((*v)[i], path + "[" + std::to_string(i) + "]");
  } else {
    throw_invalid(path, qname(path) + " must be a string or an array of strings, got " + json_kind(*v), "invalid_type");
  }
  return out;
}

std::vector<TokenId> parse_stop_token_ids(const Fields& f, const RequestLimits& limits) {
  std::vector<TokenId> out;
  const nlohmann::json* v = f.get("stop_token_ids");
  if (!v) return out;
  std::string path = f.name("stop_token_ids");
  if (!v->is_array()) throw_invalid(path, qname(path) + " must be an array of token ids, got " + json_kind(*v), "invalid_type");
  if (static_cast<int>(v->size()) > limits.max_stop_token_ids)
    throw_invalid(path, qname(path) + " has " + std::to_string(v->size()) + " ids; the limit is " +
                            std::to_string(limits.max_stop_token_ids));
  for (size_t i = 0; i < v->size(); ++i)
    out.push_back(static_cast<TokenId>(integer_value((*v)[i], path + "[" + std::to_string(i) + "]", 0, token_upper(limits))));
  return out;
}

std::vector<std::pair<TokenId, float>> parse_logit_bias(const Fields& f, const RequestLimits& limits) {
  std::vector<std::pair<TokenId, float>> out;
  const nlohmann::json* v = f.get("logit_bias");
  if (!v) return out;
  std::string path = f.name("logit_bias");
  if (!v->is_object())
    throw_invalid(path, qname(path) + " must be an object mapping token ids to biases, got " + json_kind(*v), "invalid_type");
  if (static_cast<int>(v->size()) > limits.max_logit_bias)
    throw_invalid(path, qname(path) + " has " + std::to_string(v->size()) + " entries; the limit is " +
                            std::to_string(limits.max_logit_bias));
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    std::string p = path + "." + (key.size() > 32 ? key.substr(0, 32) + "..." : key);
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    long long id = digits ? std::strtoll(key.c_str(), nullptr, 10) : -1;
    if (!digits || id > token_upper(limits))
      throw_invalid(p, "the key of " + qname(p) + " must be a token id between 0 and " +
                           std::to_string(token_upper(limits)));
    if (!it->is_number()) throw_invalid(p, qname(p) + " must be a number, got " + json_kind(*it), "invalid_type");
    double b = it->get<double>();
    if (!(b >= -100.0 && b <= 100.0))
      throw_invalid(p, qname(p) + " must be between -100 and 100, got " + format_number(b));
    out.emplace_back(static_cast<TokenId>(id), static_cast<float>(b));
  }
  return out;
}

}  // namespace

void check_response_format(const Fields& f) {
  const nlohmann::json* rf = f.get("response_format");
  if (!rf) return;
  std::string path = f.name("response_format");
  if (!rf->is_object()) throw_invalid(path, qname(path) + " must be an object, got " + json_kind(*rf), "invalid_type");
  Fields r(*rf, path);
  std::optional<std::string> type = r.string("type", 64);
  if (!type) throw_invalid(r.name("type"), qname(r.name("type")) + " is required", "missing_required_parameter");
  if (*type == "text") return;
  if (*type == "json_object" || *type == "json_schema")
    throw_invalid(r.name("type"), qname(r.name("type")) + " '" + *type +
                                      "' is not supported yet; only 'text' is (structured output is planned)",
                  "unsupported_value");
  throw_invalid(r.name("type"), qname(r.name("type")) + " must be 'text', 'json_object' or 'json_schema', got '" + *type + "'");
}

GenerationOptions parse_generation_options(const nlohmann::json& body, const RequestLimits& limits,
                                           const std::vector<std::string>& max_tokens_keys, int min_max_tokens) {
  Fields f(body, "");
  GenerationOptions o;
  if (auto m = f.string("model", 256)) o.model = *m;
  if (auto n = f.integer("n", 1, limits.max_n)) o.n = static_cast<int>(*n);
  for (const std::string& key : max_tokens_keys) {
    if (auto mt = f.integer(key, min_max_tokens, limits.max_tokens())) {
      o.max_tokens = static_cast<int>(*mt);
      break;
    }
  }
  SamplingParams& s = o.sampling;
  if (auto t = f.number("temperature", 0.0, 2.0)) s.temperature = static_cast<float>(*t);
  if (auto p = f.number("top_p", 0.0, 1.0)) {
    if (*p <= 0.0) throw_invalid("top_p", "'top_p' must be greater than 0 and at most 1, got 0");
    s.top_p = static_cast<float>(*p);
  }
  if (auto k = f.integer("top_k", -1, limits.vocab_size > 0 ? limits.vocab_size : INT32_MAX))
    s.top_k = *k < 0 ? 0 : static_cast<int>(*k);
  if (auto mp = f.number("min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*mp);
  if (auto pp = f.number("presence_penalty", -2.0, 2.0)) s.presence_penalty = static_cast<float>(*pp);
  if (auto fp = f.number("frequency_penalty", -2.0, 2.0)) s.frequency_penalty = static_cast<float>(*fp);
  if (auto rp = f.number("repetition_penalty", 0.0, 10.0)) {
    if (*rp <= 0.0) throw_invalid("repetition_penalty", "'repetition_penalty' must be greater than 0 and at most 10, got 0");
    s.repetition_penalty = static_cast<float>(*rp);
  }
  s.penalty_window = limits.penalty_window;
  if (auto seed = f.integer("seed", INT64_MIN, INT64_MAX)) o.seed = static_cast<uint64_t>(*seed);
  s.logit_bias = parse_logit_bias(f, limits);
  o.stop = parse_stop(f, limits);
  o.stop_token_ids = parse_stop_token_ids(f, limits);
  if (auto mt = f.integer("min_tokens", 0, limits.max_tokens())) {
    o.min_tokens = static_cast<int>(*mt);
    if (o.max_tokens && o.min_tokens > *o.max_tokens)
      throw_invalid("min_tokens", "'min_tokens' (" + std::to_string(o.min_tokens) + ") must not exceed max_tokens (" +
                                      std::to_string(*o.max_tokens) + ")");
  }
  if (auto b = f.boolean("ignore_eos")) o.ignore_eos = *b;
  if (auto b = f.boolean("skip_special_tokens")) o.skip_special_tokens = *b;
  if (auto b = f.boolean("stream")) o.stream = *b;
  if (const nlohmann::json* so = f.get("stream_options")) {
    if (!so->is_object())
      throw_invalid("stream_options", "'stream_options' must be an object, got " + std::string(json_kind(*so)), "invalid_type");
    Fields sf(*so, "stream_options");
    if (auto iu = sf.boolean("include_usage")) o.include_usage = *iu;
  }
  if (auto u = f.string("user", 4096)) o.user = *u;
  check_response_format(f);
  return o;
}

}  // namespace strata
