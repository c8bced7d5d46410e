#include "server/openai/tool_parser_format.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>

#include "server/openai/tool_parser_text.hpp"

namespace strata::tool_parsing {

namespace {
bool may_appear_outside_strings(char c) {
  switch (c) {
    case ' ': case '\t': case '\n': case '\r': case ',': case ':': case '-': case '+': case '.':
    case 'e': case 'E': case 't': case 'r': case 'u': case 'f': case 'a': case 'l': case 's': case 'n':
      return true;
    default:
      return c >= '0' && c <= '9';
  }
}
}  // namespace

JsonExtent::Status JsonExtent::scan(std::string_view text, size_t start) {
  if (start_ != start) {
    reset();
    start_ = start;
    pos_ = start;
    if (start >= text.size()) return Status::incomplete;
    if (text[start] != '{' && text[start] != '[') return Status::invalid;
  }
  if (depth_ == 0 && pos_ > start_) return Status::complete;
  while (pos_ < text.size()) {
    char c = text[pos_++];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      if (++depth_ > kMaxJsonDepth) return Status::invalid;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) return Status::complete;
    } else if (!may_appear_outside_strings(c)) {
      // Not JSON, whatever follows (a closing tag, prose): decided now rather than at the end of the output.
      return Status::invalid;
    }
  }
  return Status::incomplete;
}

std::optional<Json> parse_json(std::string_view text) {
  // The bracket bound comes first: it makes the recursive parts of parsing and dumping safe.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return std::nullopt;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

void FormatParser::feed(std::string_view text, ParsedDelta& out) {
  out_ = &out;
  buf_.append(text);
  step(false);
  out_ = nullptr;
}

void FormatParser::finish(ParsedDelta& out) {
  out_ = &out;
  step(true);
  // Whitespace that only trailed the last call is not part of the answer.
  held_space_.clear();
  out_ = nullptr;
}

void FormatParser::emit_content(std::string_view text) {
  if (text.empty()) return;
  if (after_call_) {
    if (text::skip_space(text, 0) == text.size()) {
      held_space_.append(text);
      return;
    }
    out_->content += held_space_;
    held_space_.clear();
    after_call_ = false;
  }
  out_->content.append(text);
}

void FormatParser::emit_call(const CallCandidate& call) {
  held_space_.clear();
  after_call_ = true;
  ToolCallDelta head;
  head.index = next_index_++;
  head.id = new_call_id();
  head.type = "function";
  head.name = call.name;
  out_->tool_calls.push_back(std::move(head));
  ToolCallDelta args;
  args.index = next_index_ - 1;
  args.arguments = call.arguments;
  out_->tool_calls.push_back(std::move(args));
}

bool FormatParser::content_until(std::string_view marker, bool at_end) {
  size_t p = buf_.find(marker);
  if (p != std::string::npos) {
    emit_content(std::string_view(buf_).substr(0, p));
    buf_.erase(0, p);
    return true;
  }
  size_t keep = at_end ? 0 : text::partial_marker_suffix(buf_, marker);
  emit_content(std::string_view(buf_).substr(0, buf_.size() - keep));
  buf_.erase(0, buf_.size() - keep);
  return false;
}

std::optional<CallCandidate> FormatParser::call_from_object(const Json& value) const {
  if (!value.is_object()) return std::nullopt;
  auto name = value.find("name");
  if (name == value.end() || !name->is_string()) return std::nullopt;
  const Json* arguments = nullptr;
  for (const char* key : {"arguments", "parameters"}) {
    auto it = value.find(key);
    if (it != value.end()) {
      arguments = &*it;
      break;
    }
  }
  return call_from_parts(name->get<std::string>(), arguments);
}

std::optional<CallCandidate> FormatParser::call_from_parts(std::string name, const Json* arguments) const {
  if (name.empty()) return std::nullopt;
  if (!tool_names_.empty() &&
      std::find(tool_names_.begin(), tool_names_.end(), name) == tool_names_.end()) {
    return std::nullopt;
  }
  CallCandidate call;
  call.name = std::move(name);
  if (arguments == nullptr) {
    call.arguments = "{}";
    return call;
  }
  const Json* object = arguments;
  std::optional<Json> decoded;
  if (arguments->is_string()) {
    // Some models write the arguments as a JSON string holding the object, as the OpenAI API itself does.
    decoded = parse_json(arguments->get_ref<const std::string&>());
    if (!decoded) return std::nullopt;
    object = &*decoded;
  }
  if (!object->is_object()) return std::nullopt;
  call.arguments = object->dump(-1, ' ', false, Json::error_handler_t::replace);
  return call;
}

std::string new_call_id() {
  // A process-wide random base keeps ids unique across restarts; the counter keeps them unique within one.
  static const uint64_t base = [] {
    std::random_device device;
    return (uint64_t(device()) << 32) ^ uint64_t(device());
  }();
  static std::atomic<uint64_t> counter{0};
  auto mix = [](uint64_t x) {  // splitmix64 finaliser: spreads consecutive counters over all bits
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  uint64_t n = counter.fetch_add(1);
  uint64_t words[2] = {mix(base ^ n), mix(base + 2 * n + 1)};
  std::string id = "call_";
  for (uint64_t w : words) {
    for (int i = 0; i < 12; ++i) {
      id += kAlphabet[w % 62];
      w /= 62;
    }
  }
  return id;
}

}  // namespace strata::tool_parsing
