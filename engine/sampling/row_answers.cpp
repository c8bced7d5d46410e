#include "engine/sampling/row_answers.hpp"

#include "engine/sampling/logprobs.hpp"

namespace strata {

void answer_rows(std::vector<RowAnswer>& rows, int vocab, const ParallelFor& parallel_for) {
  auto answer = [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      RowAnswer& a = rows[size_t(i)];
      RowResult& r = *a.out;
      if (a.want_pick)
        r.pick = a.device_pick >= 0 ? a.device_pick : pick_token(a.logits, vocab, *a.params, a.history, a.pos);
      if (a.n_logprobs >= 0) compute_logprobs(a.logits, vocab, r.pick, a.n_logprobs, &r.pick_logprob, &r.top);
      if (a.want_logits) r.logits.assign(a.logits, a.logits + vocab);
    }
  };
  // Host work worth spreading: a draw or logprobs over the whole vocabulary, or many argmaxes of a large one.
  size_t host_work = 0;
  for (const RowAnswer& a : rows) {
    const bool host_pick = a.want_pick && a.device_pick < 0;
    host_work += (host_pick ? (a.params->greedy() ? 1 : 8) : 0) + (a.n_logprobs >= 0 ? 8 : 0);
  }
  const int n = int(rows.size());
  if (parallel_for && n > 1 && host_work * size_t(vocab) >= (size_t(1) << 18))
    parallel_for(n, answer);
  else
    answer(0, n);
}

}  // namespace strata
