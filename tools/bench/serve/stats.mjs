// Latency and throughput statistics with the definitions vLLM's benchmark_serving uses, so numbers from
// both tools can be compared: percentiles interpolate linearly between order statistics (numpy's default),
// std is the population deviation, and TPOT skips requests with fewer than two output tokens because their
// decode time is undefined.

export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export function summarize(values) {
  const n = values.length;
  if (n === 0) return { count: 0, mean: null, std: null, min: null, p50: null, p90: null, p99: null, max: null };
  let sum = 0;
  for (const v of values) sum += v;
  const mean = sum / n;
  let sq = 0;
  for (const v of values) sq += (v - mean) * (v - mean);
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return {
    count: n,
    mean,
    std: Math.sqrt(sq / n),
    min,
    p50: percentile(values, 50),
    p90: percentile(values, 90),
    p99: percentile(values, 99),
    max,
  };
}

// Per-request latencies in milliseconds from one request's timeline. `chunkTimes` are the arrival times of
// the chunks that stood for generated tokens (client.mjs chunkText), relative to the moment the request was
// sent; TTFT is the first of them, as vLLM's benchmark_serving measures it. `firstTextMs` (time to the first
// non-empty text) is reported beside it.
export function requestLatencies(record) {
  const { chunkTimes, e2eMs, outputTokens } = record;
  const ttftMs = chunkTimes.length > 0 ? chunkTimes[0] : null;
  const itlMs = [];
  for (let i = 1; i < chunkTimes.length; i++) itlMs.push(chunkTimes[i] - chunkTimes[i - 1]);
  const tpotMs = ttftMs !== null && outputTokens > 1 ? (e2eMs - ttftMs) / (outputTokens - 1) : null;
  return { ttftMs, tpotMs, itlMs, e2eMs };
}

// One phase's report: throughput over the phase's wall time (first send to last completion) and latency
// summaries over the requests that succeeded; failures are counted and listed, never averaged in.
export function phaseReport(records, durationMs) {
  const ok = records.filter((r) => r.ok);
  const failed = records.filter((r) => !r.ok);
  const ttft = [];
  const ttfText = [];
  const tpot = [];
  const itl = [];
  const e2el = [];
  let outputTokens = 0;
  let promptTokens = 0;
  const perRequest = [];
  for (const r of records) {
    const lat = r.ok ? requestLatencies(r) : null;
    if (lat) {
      if (lat.ttftMs !== null) ttft.push(lat.ttftMs);
      if (r.firstTextMs != null) ttfText.push(r.firstTextMs);
      if (lat.tpotMs !== null) tpot.push(lat.tpotMs);
      for (const g of lat.itlMs) itl.push(g);
      e2el.push(lat.e2eMs);
      outputTokens += r.outputTokens;
      promptTokens += r.promptTokens ?? 0;
    }
    perRequest.push({
      index: r.index,
      sent_at_ms: r.sentAtMs ?? null,
      sent_unix_ms: r.sentUnixMs ?? null,
      response_id: r.responseId ?? null,
      reused_connection: r.reusedConnection ?? null,
      ok: r.ok,
      status: r.status,
      error: r.error ?? null,
      prompt_tokens: r.promptTokens ?? null,
      output_tokens: r.ok ? r.outputTokens : null,
      output_tokens_source: r.outputTokensSource ?? null,
      finish_reason: r.finishReason ?? null,
      token_chunks: r.chunkTimes.length,
      ttft_ms: lat ? lat.ttftMs : null,
      first_text_ms: r.ok ? r.firstTextMs ?? null : null,
      tpot_ms: lat ? lat.tpotMs : null,
      e2el_ms: lat ? lat.e2eMs : null,
      itl_ms: lat ? lat.itlMs : [],
    });
  }
  const seconds = durationMs / 1000;
  const rate = (x) => (seconds > 0 ? x / seconds : null);
  return {
    requests: records.length,
    completed: ok.length,
    failed: failed.length,
    // Requests sent on a connection an earlier request had used (keep-alive), as a long-lived client does.
    reused_connections: records.filter((r) => r.reusedConnection === true).length,
    errors: failed.map((r) => ({ index: r.index, status: r.status, message: r.error })),
    duration_s: seconds,
    total_prompt_tokens: promptTokens,
    total_output_tokens: outputTokens,
    request_throughput: rate(ok.length),
    output_throughput: rate(outputTokens),
    total_token_throughput: rate(outputTokens + promptTokens),
    ttft_ms: summarize(ttft),
    first_text_ms: summarize(ttfText),
    tpot_ms: summarize(tpot),
    itl_ms: summarize(itl),
    e2el_ms: summarize(e2el),
    per_request: perRequest,
  };
}
