#include "engine/core/output.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace strata {
namespace {

bool contains(const std::vector<TokenId>& v, TokenId t) { return std::find(v.begin(), v.end(), t) != v.end(); }

}  // namespace

std::vector<TokenId> OutputProcessor::min_tokens_mask(const GenerationRequest& req) const {
  std::vector<TokenId> mask = req.stop_token_ids;
  if (!req.ignore_eos) mask.insert(mask.end(), eos_.begin(), eos_.end());
  return mask;
}

bool OutputProcessor::ends_request(const GenerationRequest& req, TokenId t) const {
  return contains(req.stop_token_ids, t) || (!req.ignore_eos && contains(eos_, t));
}

void OutputProcessor::ensure_first_prompt_logprob(SlotState& s) const {
  if (!s.prompt_logprobs.empty() || s.n_prompt == 0) return;
  TokenEvent first;  // the first prompt token has nothing before it to be scored by
  first.token = s.seq[0];
  first.text = tok_.decode({s.seq[0]}, false);
  s.prompt_logprobs.push_back(std::move(first));
  s.prompt_logprobs_done = 1;
}

FinishEvent OutputProcessor::finish(SlotState& s, FinishReason reason, std::string text, std::string stop) const {
  FinishEvent f;
  f.reason = reason;
  f.text = std::move(text);
  f.stop_matched = std::move(stop);
  f.prompt_tokens = s.n_prompt;
  f.completion_tokens = s.n_generated;
  if (s.req->prompt_logprobs) {
    ensure_first_prompt_logprob(s);
    f.prompt_logprobs = s.prompt_logprobs;
  }
  return f;
}

void OutputProcessor::drain_tail(SlotState& s, FinishEvent& f) const {
  std::string tail = s.detok.flush();
  bool matching = s.n_generated >= s.req->min_tokens;
  if (!matching) {
    f.text += tail;
    return;
  }
  f.text += s.stops.push(tail);
  if (s.stops.matched()) {
    f.reason = FinishReason::Stop;
    f.stop_matched = s.stops.matched_stop();
  } else {
    f.text += s.stops.flush();
  }
}

OutputProcessor::Verdict OutputProcessor::accept_pick(SlotState& s, TokenId t) const {
  s.seq.push_back(t);
  ++s.n_generated;
  if (s.n_generated > s.req->min_tokens && ends_request(*s.req, t)) return Verdict::StopId;
  return s.n_generated >= s.max_tokens ? Verdict::Length : Verdict::Continue;
}

std::optional<FinishEvent> OutputProcessor::emit_pick(SlotState& s, RowResult r, Verdict v, int n_at) const {
  if (v == Verdict::StopId) {
    s.n_generated = n_at;
    FinishEvent f = finish(s, FinishReason::Stop, "", "");
    drain_tail(s, f);
    return f;
  }
  TokenEvent ev;
  ev.token = r.pick;
  ev.logprob = r.pick_logprob;
  ev.top = std::move(r.top);
  std::string piece = s.detok.step(r.pick);
  // Before min_tokens no stop string may match, so nothing needs holding back either; once matching starts
  // the matcher's buffer is empty and sees every later byte.
  ev.text = n_at >= s.req->min_tokens ? s.stops.push(piece) : piece;
  bool stopped = s.stops.matched();
  s.channel->push(Event{std::move(ev), std::nullopt}, waker_ == nullptr);
  if (waker_) waker_->post(s.channel);
  if (!stopped && v == Verdict::Continue) return std::nullopt;
  s.n_generated = n_at;
  if (stopped) return finish(s, FinishReason::Stop, "", s.stops.matched_stop());
  return finish_length(s);
}

FinishEvent OutputProcessor::finish_length(SlotState& s) const {
  FinishEvent f = finish(s, FinishReason::Length, "", "");
  drain_tail(s, f);
  return f;
}

void OutputProcessor::record_prompt_logprob(SlotState& s, int pos, const std::vector<float>& logits) const {
  ensure_first_prompt_logprob(s);
  int target = pos + 1;
  if (target != static_cast<int>(s.prompt_logprobs.size()) || target >= s.n_prompt || logits.empty()) return;
  TokenId t = s.seq[static_cast<size_t>(target)];
  float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - mx));
  float lse = mx + static_cast<float>(std::log(sum));
  TokenEvent ev;
  ev.token = t;
  ev.text = tok_.decode({t}, false);
  ev.logprob = (t >= 0 && static_cast<size_t>(t) < logits.size()) ? logits[static_cast<size_t>(t)] - lse : -INFINITY;
  int n_top = std::max(s.req->logprobs, 0);
  if (n_top > 0) {
    std::vector<TokenId> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<TokenId>(i);
    size_t k = std::min(ids.size(), static_cast<size_t>(n_top));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(k), ids.end(), [&](TokenId a, TokenId b) {
      float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
      return la != lb ? la > lb : a < b;
    });
    for (size_t i = 0; i < k; ++i) ev.top.push_back({ids[i], logits[static_cast<size_t>(ids[i])] - lse});
  }
  s.prompt_logprobs.push_back(std::move(ev));
  s.prompt_logprobs_done = static_cast<int>(s.prompt_logprobs.size());
}

}  // namespace strata
