// Mistral tool calls, in the two forms its tokenizers produce:
//   [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]          (v3 tokenizers)
//   [TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g[ARGS]{...}              (v11+ tokenizers; [CALL_ID]id may precede [ARGS])
#include <cctype>

#include "server/openai/tool_parser_format.hpp"
#include "server/openai/tool_parser_text.hpp"

namespace strata::tool_parsing {
namespace {

constexpr std::string_view kMarker = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";
constexpr size_t kMaxNameBytes = 256;  // a longer "name" is prose, and waiting for [ARGS] would hold it all

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

class MistralParser final : public FormatParser {
 public:
  using FormatParser::FormatParser;

 private:
  void step(bool at_end) override {
    for (;;) {
      if (!in_call_) {
        if (!content_until(kMarker, at_end)) return;
        in_call_ = true;
        extent_.reset();
      }
      if (!step_call(at_end)) return;
    }
  }

  // buf_ starts with [TOOL_CALLS]. Returns false when more text is needed.
  bool step_call(bool at_end) {
    size_t p = text::skip_space(buf_, kMarker.size());
    if (p == buf_.size()) return need_more(at_end);
    if (buf_[p] == '[' || buf_[p] == '{') return step_json(p, "", at_end);

    size_t q = p;
    while (q < buf_.size() && is_name_char(buf_[q]) && q - p <= kMaxNameBytes) ++q;
    if (q - p > kMaxNameBytes) return give_back(kMarker.size());
    if (q == buf_.size()) return need_more(at_end);
    std::string name = buf_.substr(p, q - p);
    std::string_view rest = std::string_view(buf_).substr(q);
    if (text::starts_with(rest, kCallId)) {
      // The call id the model wrote is not ours to reuse: OpenAI ids are assigned by the server.
      q += kCallId.size();
      while (q < buf_.size() && std::isalnum(static_cast<unsigned char>(buf_[q]))) ++q;
      if (q == buf_.size()) return need_more(at_end);
      rest = std::string_view(buf_).substr(q);
    }
    if (text::starts_with(rest, kArgs)) {
      if (name.empty()) return give_back(kMarker.size());
      size_t json_at = text::skip_space(buf_, q + kArgs.size());
      if (json_at == buf_.size()) return need_more(at_end);
      if (buf_[json_at] != '{') return give_back(json_at);
      return step_json(json_at, name, at_end);
    }
    if (!at_end && (text::is_proper_prefix_of(rest, kArgs) || text::is_proper_prefix_of(rest, kCallId))) {
      return false;
    }
    return give_back(kMarker.size());
  }

  // The JSON at buf_[json_at]: an array of call objects or one call object when `name` is empty, else the
  // arguments object of the call `name`.
  bool step_json(size_t json_at, const std::string& name, bool at_end) {
    switch (extent_.scan(buf_, json_at)) {
      case JsonExtent::Status::incomplete:
        return need_more(at_end);
      case JsonExtent::Status::invalid:
        return give_back(extent_.end());
      case JsonExtent::Status::complete:
        break;
    }
    size_t end = extent_.end();
    std::optional<Json> value = parse_json(std::string_view(buf_).substr(json_at, end - json_at));
    std::vector<CallCandidate> calls;
    if (value && !name.empty()) {
      if (auto call = call_from_parts(name, &*value)) calls.push_back(std::move(*call));
    } else if (value && value->is_object()) {
      if (auto call = call_from_object(*value)) calls.push_back(std::move(*call));
    } else if (value && value->is_array()) {
      for (const Json& element : *value) {
        auto call = call_from_object(element);
        if (!call) {
          calls.clear();
          break;
        }
        calls.push_back(std::move(*call));
      }
    }
    if (calls.empty()) return give_back(end);
    for (const CallCandidate& call : calls) emit_call(call);
    buf_.erase(0, end);
    in_call_ = false;
    return true;
  }

  bool need_more(bool at_end) { return at_end ? give_back(buf_.size()) : false; }

  // The first n bytes were not a call: they are answer text.
  bool give_back(size_t n) {
    emit_content(std::string_view(buf_).substr(0, n));
    buf_.erase(0, n);
    in_call_ = false;
    return true;
  }

  bool in_call_ = false;
  JsonExtent extent_;
};

}  // namespace

std::unique_ptr<FormatParser> make_mistral_parser(std::vector<std::string> tool_names) {
  return std::make_unique<MistralParser>(std::move(tool_names));
}

}  // namespace strata::tool_parsing
