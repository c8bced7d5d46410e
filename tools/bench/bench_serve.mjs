#!/usr/bin/env node
// Streaming load generator for an OpenAI-compatible server on this machine, reporting what vLLM's
// benchmark_serving reports (throughput, TTFT, TPOT, ITL with mean/p50/p90/p99). With --check-solo it is
// also the batch-invariance check through HTTP: every prompt's output under load must equal its solo run.
import { writeFileSync } from 'node:fs';
import { parseArgs, UsageError, USAGE } from './serve/args.mjs';
import { requestBody, endpointPath } from './serve/client.mjs';
import { autoThreads, runPhase } from './serve/runner.mjs';
import { phaseReport, summarize } from './serve/stats.mjs';
import { buildPrompts, tokenizeCounter } from './serve/prompts.mjs';
import { latencyPlot } from './serve/plot.mjs';

const fmt = (v, d = 2) => (v === null || v === undefined ? '-' : v.toFixed(d));

function printPhase(name, r) {
  const line = (k, v) => console.log(`${k.padEnd(36)}${v}`);
  console.log(`\n==== ${name} ${'='.repeat(Math.max(0, 60 - name.length))}`);
  line('Successful requests:', r.completed);
  line('Failed requests:', r.failed);
  if (r.not_sent) line('Not sent (duration limit):', r.not_sent);
  line('Duration (s):', fmt(r.duration_s));
  line('Total input tokens:', r.total_prompt_tokens);
  line('Total generated tokens:', r.total_output_tokens);
  line('Request throughput (req/s):', fmt(r.request_throughput));
  line('Output token throughput (tok/s):', fmt(r.output_throughput));
  line('Total token throughput (tok/s):', fmt(r.total_token_throughput));
  for (const [k, label] of [['ttft_ms', 'TTFT'], ['tpot_ms', 'TPOT'], ['itl_ms', 'ITL'], ['e2el_ms', 'E2E latency']]) {
    const s = r[k];
    line(`${label} (ms) mean/p50/p90/p99:`, `${fmt(s.mean)} / ${fmt(s.p50)} / ${fmt(s.p90)} / ${fmt(s.p99)}`);
  }
  if (r.client) {
    const d = r.client.loop_delay_ms;
    line('Client threads / CPU (all threads) / worst event-loop delay p50/p99/max (ms):',
      `${r.client.threads} / ${fmt(100 * r.client.cpu_fraction, 0)} % / ${fmt(d.p50)} / ${fmt(d.p99)} / ${fmt(d.max)}`);
  }
  for (const e of r.errors.slice(0, 10)) console.log(`  request ${e.index}: ${e.message}`);
  if (r.errors.length > 10) console.log(`  ... and ${r.errors.length - 10} more errors`);
}

function printSummary(levels) {
  console.log('\nconcurrency  ok/sent  fail  req/s    out tok/s  TTFT p50  TTFT p99  TPOT p50  ITL p50  ITL p99  loop p99');
  for (const r of levels) {
    console.log(
      `${String(r.concurrency).padStart(11)}  ${`${r.completed}/${r.requests}`.padStart(7)}  ${String(r.failed).padStart(4)}  ` +
        `${fmt(r.request_throughput).padStart(7)}  ${fmt(r.output_throughput, 1).padStart(9)}  ${fmt(r.ttft_ms.p50).padStart(8)}  ` +
        `${fmt(r.ttft_ms.p99).padStart(8)}  ${fmt(r.tpot_ms.p50).padStart(8)}  ${fmt(r.itl_ms.p50).padStart(7)}  ${fmt(r.itl_ms.p99).padStart(7)}  ` +
        `${fmt(r.client ? r.client.loop_delay_ms.p99 : null).padStart(8)}`,
    );
  }
}

async function resolveModel(o, headers) {
  if (o.model) return o.model;
  let res;
  try {
    res = await fetch(`${o.baseUrl}/v1/models`, { headers, signal: AbortSignal.timeout(30000) });
  } catch (e) {
    throw new UsageError(`cannot reach ${o.baseUrl}/v1/models: ${e.cause?.message ?? e.message}`);
  }
  if (res.status !== 200) throw new UsageError(`${o.baseUrl}/v1/models answered HTTP ${res.status}; pass --model`);
  const j = await res.json().catch(() => null);
  const id = j && Array.isArray(j.data) && j.data[0] && j.data[0].id;
  if (typeof id !== 'string') throw new UsageError(`${o.baseUrl}/v1/models listed no model; pass --model`);
  return id;
}

// First index at which two outputs differ, for a readable mismatch report.
function firstDifference(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

export async function main(argv) {
  const o = parseArgs(argv);
  if (o.help) {
    console.log(USAGE);
    return 0;
  }
  const headers = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
  const model = await resolveModel(o, headers);
  // Each level runs prompts of its own: a level that reran an earlier level's prompts would find them in the
  // server's prefix cache and time almost no prefill. --check-solo compares outputs, so it reuses them.
  const levelsWithPrompts = o.checkSolo ? 1 : o.concurrency.length;
  const promptSet = await buildPrompts({
    count: o.requests * levelsWithPrompts,
    promptTokens: o.promptTokens,
    seed: o.seed ?? 0,
    countTokens: o.calibrate ? tokenizeCounter(o.baseUrl, model, headers) : null,
  });
  const known = promptSet.tokenCounts.filter((c) => c !== null);
  if (!o.quiet)
    console.log(
      `model ${model} at ${o.baseUrl}${endpointPath(o.endpoint)}: ${o.requests * levelsWithPrompts} prompts of ` +
        (promptSet.calibrated ? `${summarize(known).min}-${summarize(known).max} tokens (calibrated with /tokenize)` : `about ${o.promptTokens} tokens (estimated)`),
    );
  const url = `${o.baseUrl}${endpointPath(o.endpoint)}`;
  // Request i of a level with prompt offset `base` runs prompt base + i (its index in the reports).
  const requestOf = (base) => ({
    url,
    headers,
    indexBase: base,
    bodies: Array.from({ length: o.requests }, (_, i) =>
      requestBody({
        endpoint: o.endpoint,
        model,
        prompt: promptSet.prompts[base + i],
        maxTokens: o.maxTokens,
        temperature: o.temperature,
        seed: o.seed === null ? null : o.seed + base + i,
        ignoreEos: o.ignoreEos,
      }),
    ),
  });
  const phase = async (concurrency, level, rampUpS) => {
    const base = o.checkSolo ? 0 : level * o.requests;
    const run = await runPhase({
      count: o.requests, concurrency, durationLimitMs: o.durationLimitS * 1000, request: requestOf(base),
      rampUpMs: rampUpS * 1000, threads: o.clientThreads === 'auto' ? autoThreads(concurrency) : o.clientThreads,
    });
    // With a ramp-up the statistics cover the steady part: from the first request after the ramp-up wave was
    // sent to the last completion.
    let records = run.records;
    let durationMs = run.durationMs;
    const rampUp = records.filter((r) => r.rampUp).length;
    if (rampUp > 0) {
      records = records.filter((r) => !r.rampUp);
      durationMs = records.length
        ? Math.max(...records.map((r) => r.endedAtMs)) - Math.min(...records.map((r) => r.sentAtMs))
        : 0;
    }
    const rep = {
      concurrency, prompt_offset: base, ...phaseReport(records, durationMs), ramp_up_requests: rampUp,
      not_sent: run.notSent, hit_duration_limit: run.hitLimit, client: run.client,
    };
    return { rep, records: run.records };
  };

  const out = {
    tool: 'strata bench_serve',
    started_at: new Date().toISOString(),
    config: {
      base_url: o.baseUrl, endpoint: o.endpoint, model, concurrency: o.concurrency, requests: o.requests,
      prompt_tokens: o.promptTokens, max_tokens: o.maxTokens, temperature: o.temperature, seed: o.seed,
      ignore_eos: o.ignoreEos, duration_limit_s: o.durationLimitS, ramp_up_s: o.rampUpS, client_threads: o.clientThreads, check_solo: o.checkSolo,
      prompts_per_level: o.checkSolo ? 'shared' : 'fresh',
    },
    prompts: {
      calibrated: promptSet.calibrated,
      tokens_per_word: promptSet.tokensPerWord,
      token_counts: promptSet.tokenCounts,
      token_count_summary: summarize(known),
    },
    solo: null,
    levels: [],
    check_solo: null,
  };
  let failed = false;
  let soloRecords = null;
  if (o.checkSolo) {
    const { rep, records } = await phase(1, 0, 0);
    out.solo = rep;
    soloRecords = records;
    if (!o.quiet) printPhase('solo runs (concurrency 1)', rep);
    failed ||= rep.failed > 0 || rep.not_sent > 0;
    out.check_solo = { passed: true, compared: 0, mismatches: [] };
  }
  for (const [level, c] of o.concurrency.entries()) {
    const { rep, records } = await phase(c, level, o.rampUpS);
    out.levels.push(rep);
    if (!o.quiet) printPhase(`concurrency ${c}`, rep);
    failed ||= rep.failed > 0 || rep.not_sent > 0;
    if (soloRecords) {
      const solo = new Map(soloRecords.filter((r) => r.ok).map((r) => [r.index, r]));
      for (const r of records) {
        const s = solo.get(r.index);
        if (!r.ok || !s) continue;
        out.check_solo.compared++;
        const at = firstDifference(s.text, r.text);
        if (at >= 0)
          out.check_solo.mismatches.push({
            concurrency: c, index: r.index, first_difference_at: at, solo_text: s.text, load_text: r.text,
          });
      }
    }
  }
  if (out.check_solo) {
    out.check_solo.passed = out.check_solo.mismatches.length === 0 && !failed;
    for (const m of out.check_solo.mismatches.slice(0, 10))
      console.log(
        `MISMATCH request ${m.index} at concurrency ${m.concurrency}: output differs from its solo run at character ${m.first_difference_at}\n` +
          `  solo: ${JSON.stringify(m.solo_text.slice(m.first_difference_at, m.first_difference_at + 60))}\n` +
          `  load: ${JSON.stringify(m.load_text.slice(m.first_difference_at, m.first_difference_at + 60))}`,
      );
    console.log(
      `check-solo: ${out.check_solo.passed ? 'PASS' : 'FAIL'} (${out.check_solo.compared} outputs compared, ` +
        `${out.check_solo.mismatches.length} differ${failed ? ', some requests failed or were not sent' : ''})`,
    );
  }
  printSummary(out.levels);
  out.finished_at = new Date().toISOString();
  if (o.json) writeFileSync(o.json, JSON.stringify(out, null, 1) + '\n');
  if (o.png) {
    const heading = `${model} - ${o.endpoint}, prompt ${o.promptTokens}, max tokens ${o.maxTokens}`;
    writeFileSync(o.png, latencyPlot(out.levels, heading));
  }
  const mismatched = out.check_solo && out.check_solo.mismatches.length > 0;
  return failed || mismatched ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('bench_serve.mjs')) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      if (e instanceof UsageError) {
        console.error(`bench_serve: ${e.message}`);
        process.exitCode = 2;
      } else {
        console.error(`bench_serve: ${e.stack ?? e}`);
        process.exitCode = 2;
      }
    },
  );
}
