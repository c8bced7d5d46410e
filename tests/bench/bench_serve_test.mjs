// Specification of tools/bench/bench_serve.mjs: the statistics on known timelines, the SSE parser on
// arbitrarily split bytes, option checking, the PNG encoder, and whole runs against fake_server.mjs whose
// timing and outputs are known (including injected failures and a batch-variant server).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateSync } from 'node:zlib';
import { percentile, summarize, requestLatencies, phaseReport } from '../../tools/bench/serve/stats.mjs';
import { SseParser } from '../../tools/bench/serve/sse.mjs';
import { parseArgs, loopbackBaseUrl } from '../../tools/bench/serve/args.mjs';
import { crc32, encodePng } from '../../tools/bench/serve/png.mjs';
import { latencyPlot, niceStep } from '../../tools/bench/serve/plot.mjs';
import { autoThreads } from '../../tools/bench/serve/runner.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOOL = path.resolve(here, '../../tools/bench/bench_serve.mjs');
const FAKE = path.join(here, 'fake_server.mjs');
const SMOKE = path.join(here, 'serve_smoke.mjs');
const close = (a, b, eps = 1e-9) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

test('percentiles interpolate linearly between order statistics, as numpy does', () => {
  const v = [4, 1, 3, 2];
  close(percentile(v, 0), 1);
  close(percentile(v, 50), 2.5);
  close(percentile(v, 90), 3.7); // rank 2.7 between 3 and 4
  close(percentile(v, 99), 3.97);
  close(percentile(v, 100), 4);
  assert.equal(percentile([], 50), null);
  const s = summarize([2, 4, 4, 4, 5, 5, 7, 9]);
  close(s.mean, 5);
  close(s.std, 2); // population standard deviation
  assert.equal(s.count, 8);
  assert.equal(summarize([]).p99, null);
});

test('TTFT is the first token chunk, ITL every gap after it, TPOT (e2e - ttft) / (tokens - 1)', () => {
  const lat = requestLatencies({ chunkTimes: [100, 110, 130, 160], e2eMs: 165, outputTokens: 4 });
  close(lat.ttftMs, 100);
  assert.deepEqual(lat.itlMs, [10, 20, 30]);
  close(lat.tpotMs, 65 / 3);
  // Chunks carrying several tokens: TPOT counts tokens, ITL counts chunk gaps.
  const multi = requestLatencies({ chunkTimes: [50, 90], e2eMs: 90, outputTokens: 9 });
  close(multi.tpotMs, 5);
  assert.deepEqual(multi.itlMs, [40]);
  assert.equal(requestLatencies({ chunkTimes: [70], e2eMs: 70, outputTokens: 1 }).tpotMs, null);
});

test('a phase report pools ITL over all requests, rates over wall time, and leaves failures out', () => {
  const rec = (index, chunkTimes, e2eMs, outputTokens, promptTokens) => ({ index, ok: true, status: 200, chunkTimes, e2eMs, outputTokens, promptTokens });
  const records = [
    rec(0, [100, 110, 130, 160], 160, 4, 10),
    rec(1, [200, 250], 250, 2, 12),
    rec(2, [300], 300, 1, 8),
    { index: 3, ok: false, status: 500, error: 'HTTP 500: boom', chunkTimes: [], e2eMs: null, outputTokens: 0 },
  ];
  const r = phaseReport(records, 2000);
  assert.equal(r.requests, 4);
  assert.equal(r.completed, 3);
  assert.equal(r.failed, 1);
  assert.deepEqual(r.errors, [{ index: 3, status: 500, message: 'HTTP 500: boom' }]);
  assert.equal(r.total_output_tokens, 7);
  assert.equal(r.total_prompt_tokens, 30);
  close(r.request_throughput, 1.5);
  close(r.output_throughput, 3.5);
  close(r.total_token_throughput, 18.5);
  // TTFT over [100, 200, 300]; ITL over the pooled gaps [10, 20, 30, 50]; TPOT over [20, 50] (request 2 has one token).
  close(r.ttft_ms.mean, 200);
  close(r.ttft_ms.p50, 200);
  close(r.ttft_ms.p90, 280);
  assert.equal(r.itl_ms.count, 4);
  close(r.itl_ms.p50, 25);
  close(r.itl_ms.p99, 30 + 20 * 0.97);
  assert.equal(r.tpot_ms.count, 2);
  close(r.tpot_ms.mean, 35);
  close(r.e2el_ms.max, 300);
  assert.equal(r.per_request[3].ttft_ms, null);
});

test('the SSE parser yields the same events however the bytes are split', () => {
  const stream = ': comment\r\ndata: {"a":1}\r\n\r\nevent: error\ndata: line1\ndata: line2\n\ndata: "héllo ✓"\r\rdata: [DONE]\n\n';
  const bytes = Buffer.from(stream, 'utf8');
  const expected = [
    { event: 'message', data: '{"a":1}' },
    { event: 'error', data: 'line1\nline2' },
    { event: 'message', data: '"héllo ✓"' },
    { event: 'message', data: '[DONE]' },
  ];
  const whole = new SseParser();
  assert.deepEqual([...whole.push(bytes), ...whole.end()], expected);
  for (let cut = 1; cut < bytes.length; cut++) {
    const p = new SseParser();
    const got = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut)), ...p.end()];
    assert.deepEqual(got, expected, `split at byte ${cut}`);
  }
  const bytewise = new SseParser();
  const got = [];
  for (const b of bytes) got.push(...bytewise.push(Uint8Array.of(b)));
  assert.deepEqual(got, expected);
  const unterminated = new SseParser();
  assert.deepEqual([...unterminated.push(Buffer.from('data: x')), ...unterminated.end()], []);
});

test('options: loopback targets only, and bad values name their flag', () => {
  assert.equal(loopbackBaseUrl('http://127.0.0.1:8000/v1/'), 'http://127.0.0.1:8000');
  assert.equal(loopbackBaseUrl('http://[::1]:9/'), 'http://[::1]:9');
  assert.equal(loopbackBaseUrl('http://localhost:1234'), 'http://localhost:1234');
  assert.throws(() => loopbackBaseUrl('http://192.168.1.2:8000'), /loopback/);
  assert.throws(() => loopbackBaseUrl('http://127.0.0.1.evil.com/'), /loopback/);
  assert.throws(() => parseArgs(['--concurrency', '1,x']), /--concurrency must be an integer, got 'x'/);
  assert.throws(() => parseArgs(['--concurrency', '0']), /--concurrency must be between 1/);
  assert.throws(() => parseArgs(['--temperature', '3']), /--temperature/);
  assert.throws(() => parseArgs(['--endpoint', 'embeddings']), /--endpoint/);
  assert.throws(() => parseArgs(['--requests']), /--requests needs a value/);
  assert.throws(() => parseArgs(['--bogus']), /unknown option '--bogus'/);
  assert.throws(() => parseArgs(['--check-solo', '--temperature', '0.7']), /--temperature 0 or a --seed/);
  assert.throws(() => parseArgs(['--client-threads', '0']), /--client-threads must be between 1 and 64, got 0/);
  assert.throws(() => parseArgs(['--client-threads', 'many']), /--client-threads must be an integer, got 'many'/);
  assert.equal(parseArgs([]).clientThreads, 'auto');
  assert.equal(parseArgs(['--client-threads', '3']).clientThreads, 3);
  assert.deepEqual([1, 16, 17, 64, 128, 1000].map(autoThreads), [1, 1, 2, 4, 8, 8]);
  const o = parseArgs(['--check-solo', '--temperature=0.7', '--seed', '5', '--concurrency', '1,8,32']);
  assert.deepEqual(o.concurrency, [1, 8, 32]);
  assert.equal(o.seed, 5);
});

function decodePng(buf) {
  assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let off = 8;
  const chunks = {};
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    assert.equal(buf.readUInt32BE(off + 8 + len), crc32(buf.subarray(off + 4, off + 8 + len)), `${type} CRC`);
    if (type === 'IDAT') idat.push(data);
    else chunks[type] = data;
    off += 12 + len;
  }
  assert.ok('IEND' in chunks);
  const w = chunks.IHDR.readUInt32BE(0);
  const h = chunks.IHDR.readUInt32BE(4);
  assert.equal(chunks.IHDR[8], 8);
  assert.equal(chunks.IHDR[9], 2);
  const raw = inflateSync(Buffer.concat(idat));
  assert.equal(raw.length, h * (w * 3 + 1));
  const px = (x, y) => [...raw.subarray(y * (w * 3 + 1) + 1 + x * 3, y * (w * 3 + 1) + 4 + x * 3)];
  return { w, h, px, raw };
}

test('the PNG encoder writes a valid RGB image with the pixels it was given', () => {
  close(crc32(Buffer.from('123456789')), 0xcbf43926); // the CRC-32 check value
  const w = 3;
  const h = 2;
  const rgb = Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
  const img = decodePng(encodePng(w, h, rgb));
  assert.equal(img.w, 3);
  assert.equal(img.h, 2);
  assert.deepEqual(img.px(0, 0), [255, 0, 0]);
  assert.deepEqual(img.px(2, 0), [0, 0, 255]);
  assert.deepEqual(img.px(1, 1), [40, 50, 60]);
  assert.throws(() => encodePng(2, 2, new Uint8Array(5)), /expected 12 bytes/);
});

test('the latency plot is a picture with both series colours and a white background', () => {
  assert.equal(niceStep(950), 200);
  assert.equal(niceStep(0.9), 0.2);
  const levels = [1, 8, 32].map((c) => ({ concurrency: c, ttft_ms: { p50: c * 10, p99: c * 20 }, itl_ms: { p50: 5 + c, p99: 9 + c } }));
  const img = decodePng(latencyPlot(levels, 'test'));
  assert.equal(img.w, 1100);
  assert.equal(img.h, 500);
  assert.deepEqual(img.px(0, 0), [255, 255, 255]);
  const colours = new Set();
  for (let y = 0; y < img.h; y += 1) for (let x = 0; x < img.w; x += 1) colours.add(img.px(x, y).join(','));
  assert.ok(colours.has('31,119,180'), 'p50 colour drawn');
  assert.ok(colours.has('214,39,40'), 'p99 colour drawn');
  // A missing level (no successful request) is skipped, not drawn at zero or NaN.
  decodePng(latencyPlot([{ concurrency: 4, ttft_ms: { p50: null, p99: null }, itl_ms: { p50: null, p99: null } }]));
});

// ---- whole runs against the fake server ----

function run(cmd, args, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(args[0])} did not finish in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
}

async function withFake(fakeArgs, fn) {
  const child = spawn(process.execPath, [FAKE, 'serve', '--port', '0', ...fakeArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', () => reject(new Error(`fake server exited: ${err}`)));
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-test-'));
  try {
    return await fn(`http://127.0.0.1:${port}`, dir);
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function bench(url, dir, args) {
  const json = path.join(dir, 'out.json');
  const r = await run(process.execPath, [TOOL, '--url', url, '--json', json, ...args]);
  let report = null;
  try {
    report = JSON.parse(readFileSync(json, 'utf8'));
  } catch {
    // no report written: the caller checks the exit status and output
  }
  return { ...r, report };
}

test('timings measured through HTTP match the server known TTFT and inter-token gaps', async () => {
  await withFake(['--ttft-ms', '150', '--itl-ms', '25'], async (url, dir) => {
    const t0 = Date.now();
    const r = await bench(url, dir, ['--concurrency', '1,4', '--requests', '8', '--max-tokens', '10', '--ignore-eos', '--prompt-tokens', '40', '--png', path.join(dir, 'p.png')]);
    assert.equal(r.code, 0, r.out);
    const rep = r.report;
    assert.equal(rep.prompts.calibrated, true);
    // Two levels of 8 requests, each with prompts of its own (so the second finds none in a prefix cache).
    assert.deepEqual(rep.prompts.token_counts, new Array(16).fill(40)); // the fake counts 2 tokens a word
    assert.equal(rep.config.prompts_per_level, 'fresh');
    assert.deepEqual(rep.levels.map((l) => l.prompt_offset), [0, 8]);
    assert.deepEqual(rep.levels[1].per_request.map((q) => q.index).sort((a, b) => a - b), [8, 9, 10, 11, 12, 13, 14, 15]);
    for (const l of rep.levels) {
      assert.equal(l.completed, 8);
      assert.equal(l.failed, 0);
      assert.equal(l.total_output_tokens, 80);
      assert.equal(l.total_prompt_tokens, 320);
      assert.ok(l.ttft_ms.p50 >= 149 && l.ttft_ms.p50 < 1000, `TTFT p50 ${l.ttft_ms.p50}`);
      assert.equal(l.itl_ms.count, 8 * 9);
      assert.ok(l.itl_ms.p50 >= 20 && l.itl_ms.p50 < 150, `ITL p50 ${l.itl_ms.p50}`);
      assert.ok(l.tpot_ms.p50 >= 20 && l.tpot_ms.p50 < 150, `TPOT p50 ${l.tpot_ms.p50}`);
      for (const q of l.per_request) {
        assert.equal(q.output_tokens_source, 'usage');
        assert.equal(q.itl_ms.length, 9);
        assert.match(q.response_id, /^cmpl-/);
        assert.ok(q.sent_unix_ms >= t0 && q.sent_unix_ms <= Date.now(), `sent ${q.sent_unix_ms}, test began ${t0}`);
        close(q.tpot_ms, (q.e2el_ms - q.ttft_ms) / 9, 1e-6);
      }
    }
    // Four clients each wait ~375 ms per request, one client does them in turn: about 4x the request rate.
    const [c1, c4] = rep.levels;
    // Each client goes on over the connection its last request used (keep-alive): at most one new
    // connection a client in a level (none once the calibration's connection is in the pool).
    assert.ok(c1.reused_connections >= 7, `c1 reused ${c1.reused_connections} of 8`);
    assert.ok(c4.reused_connections >= 4, `c4 reused ${c4.reused_connections} of 8`);
    assert.ok(c4.request_throughput > 2 * c1.request_throughput, `${c4.request_throughput} vs ${c1.request_throughput}`);
    decodePng(readFileSync(path.join(dir, 'p.png')));
  });
});

test('--ramp-up staggers the first requests and leaves them out of the statistics', async () => {
  await withFake(['--ttft-ms', '100', '--itl-ms', '20'], async (url, dir) => {
    // A request takes ~280 ms (100 ms to the first token, 9 gaps of 20); the four clients start 70 ms apart.
    const r = await bench(url, dir, ['--concurrency', '4', '--requests', '12', '--max-tokens', '10', '--ignore-eos', '--ramp-up', '0.28']);
    assert.equal(r.code, 0, r.out);
    const [l] = r.report.levels;
    assert.equal(r.report.config.ramp_up_s, 0.28);
    assert.equal(l.ramp_up_requests, 4);
    assert.equal(l.completed, 8);  // the 8 requests after the ramp-up wave
    assert.ok(l.per_request.every((q) => q.index >= 4), 'the first four requests are left out');
    // Equal requests keep the clients' offsets: the steady sends are ~70 ms apart, not waves of four at once.
    const sends = l.per_request.map((q) => q.sent_at_ms).sort((a, b) => a - b);
    const gaps = sends.slice(1).map((t, i) => t - sends[i]).sort((a, b) => a - b);
    assert.ok(gaps[Math.floor(gaps.length / 2)] >= 25, `gaps between sends ${gaps}`);
  });
  const bad = await bench('http://127.0.0.1:9', tmpdir(), ['--concurrency', '8', '--requests', '8', '--ramp-up', '1']);
  assert.equal(bad.code, 2);
  assert.match(bad.out, /--ramp-up leaves each client's first request out/);
});

test('clients spread over threads keep one closed loop: every request once, the ramp-up offsets', async () => {
  await withFake(['--ttft-ms', '100', '--itl-ms', '20'], async (url, dir) => {
    // 8 clients on 3 threads (3 + 3 + 2), 24 requests of ~280 ms, first requests 35 ms apart.
    const r = await bench(url, dir, ['--concurrency', '8', '--requests', '24', '--max-tokens', '10', '--ignore-eos', '--ramp-up', '0.28', '--client-threads', '3']);
    assert.equal(r.code, 0, r.out);
    assert.equal(r.report.config.client_threads, 3);
    const [l] = r.report.levels;
    assert.equal(l.client.threads, 3);
    assert.equal(l.ramp_up_requests, 8);
    assert.equal(l.completed, 16);
    assert.deepEqual(l.per_request.map((q) => q.index).sort((a, b) => a - b), Array.from({ length: 16 }, (_, i) => i + 8));
    assert.ok(l.ttft_ms.min >= 99 && l.ttft_ms.p50 < 1000, `TTFT ${JSON.stringify(l.ttft_ms)}`);
    assert.ok(l.itl_ms.p50 >= 15 && l.itl_ms.p50 < 150, `ITL p50 ${l.itl_ms.p50}`);
    // Send times from all threads are on one clock: the steady sends keep the clients' 35 ms offsets.
    const sends = l.per_request.map((q) => q.sent_at_ms).sort((a, b) => a - b);
    const gaps = sends.slice(1).map((t, i) => t - sends[i]).sort((a, b) => a - b);
    assert.ok(gaps[Math.floor(gaps.length / 2)] >= 12, `gaps between sends ${gaps}`);
    assert.ok(sends[0] >= 250 && sends[sends.length - 1] < 2000, `sends ${sends}`);
  });
});

test('chat streams: the role-only first chunk is not the first token', async () => {
  await withFake(['--ttft-ms', '150', '--itl-ms', '5'], async (url, dir) => {
    const r = await bench(url, dir, ['--endpoint', 'chat', '--concurrency', '2', '--requests', '4', '--max-tokens', '6', '--ignore-eos']);
    assert.equal(r.code, 0, r.out);
    const l = r.report.levels[0];
    assert.equal(l.completed, 4);
    assert.ok(l.ttft_ms.min >= 149, `TTFT min ${l.ttft_ms.min}`);
    assert.equal(l.per_request[0].token_chunks, 6);
  });
});

test('a completion token whose text comes later counts at its own chunk; first text is reported beside it', async () => {
  await withFake(['--ttft-ms', '100', '--itl-ms', '80', '--held-first'], async (url, dir) => {
    const r = await bench(url, dir, ['--concurrency', '1', '--requests', '2', '--max-tokens', '4', '--ignore-eos', '--no-calibrate']);
    assert.equal(r.code, 0, r.out);
    const l = r.report.levels[0];
    assert.equal(l.completed, 2);
    for (const q of l.per_request) {
      assert.equal(q.token_chunks, 4);
      assert.ok(q.ttft_ms >= 99 && q.ttft_ms < 170, `TTFT ${q.ttft_ms}`);
      assert.ok(q.first_text_ms >= q.ttft_ms + 70, `first text ${q.first_text_ms} vs TTFT ${q.ttft_ms}`);
    }
    assert.ok(l.first_text_ms.p50 >= l.ttft_ms.p50 + 70, JSON.stringify([l.ttft_ms, l.first_text_ms]));
  });
});

test('HTTP errors and error events are counted, reported, and fail the run', async () => {
  await withFake(['--ttft-ms', '5', '--itl-ms', '1', '--fail-every', '3', '--error-event-every', '4'], async (url, dir) => {
    const r = await bench(url, dir, ['--concurrency', '1', '--requests', '12', '--max-tokens', '4', '--no-calibrate']);
    assert.equal(r.code, 1, r.out);
    const l = r.report.levels[0];
    // Arrivals 3,6,9,12 answer 500; 4 and 8 break mid-stream (12 already failed with 500).
    assert.equal(l.failed, 6);
    assert.equal(l.completed, 6);
    assert.equal(l.errors.filter((e) => e.status === 500 && /injected failure/.test(e.message)).length, 4);
    assert.equal(l.errors.filter((e) => /error event in stream: injected engine fault/.test(e.message)).length, 2);
    assert.match(r.out, /Failed requests:\s+6/);
  });
});

test('check-solo passes when outputs are batch-invariant and fails when load changes them', async () => {
  await withFake(['--ttft-ms', '20', '--itl-ms', '5'], async (url, dir) => {
    const r = await bench(url, dir, ['--check-solo', '--concurrency', '4', '--requests', '8', '--max-tokens', '8', '--ignore-eos']);
    assert.equal(r.code, 0, r.out);
    assert.equal(r.report.check_solo.passed, true);
    assert.equal(r.report.check_solo.compared, 8);
    assert.equal(r.report.solo.concurrency, 1);
  });
  await withFake(['--ttft-ms', '20', '--itl-ms', '5', '--batch-variant'], async (url, dir) => {
    const r = await bench(url, dir, ['--check-solo', '--concurrency', '4', '--requests', '8', '--max-tokens', '8', '--ignore-eos']);
    assert.equal(r.code, 1, r.out);
    assert.equal(r.report.check_solo.passed, false);
    assert.ok(r.report.check_solo.mismatches.length > 0);
    assert.match(r.out, /MISMATCH request \d+ at concurrency 4/);
    assert.match(r.out, /check-solo: FAIL/);
  });
});

test('the duration limit stops a run that would take too long, and the run fails, on one thread or several', async () => {
  // Every client's one request is open at the limit and aborted; the rest are never sent.
  for (const { threads, clients, requests } of [{ threads: 1, clients: 2, requests: 6 }, { threads: 2, clients: 4, requests: 10 }]) {
    await withFake(['--ttft-ms', '10', '--itl-ms', '200'], async (url, dir) => {
      const t0 = Date.now();
      const r = await bench(url, dir, ['--concurrency', String(clients), '--requests', String(requests), '--max-tokens', '100', '--ignore-eos',
        '--duration-limit', '1', '--no-calibrate', '--client-threads', String(threads)]);
      assert.ok(Date.now() - t0 < 8000, 'stopped near the limit');
      assert.equal(r.code, 1, r.out);
      const l = r.report.levels[0];
      assert.equal(l.client.threads, threads);
      assert.equal(l.hit_duration_limit, true);
      assert.equal(l.failed, clients);
      assert.equal(l.not_sent, requests - clients);
      assert.ok(l.errors.every((e) => /duration limit/.test(e.message)));
    });
  }
});

test('bad options exit 2 before any request, naming the problem', async () => {
  const r = await run(process.execPath, [TOOL, '--url', 'http://10.1.2.3:8000']);
  assert.equal(r.code, 2);
  assert.match(r.out, /loopback/);
});

test('the CI smoke driver runs a server binary end to end, and skips only when none exists', async () => {
  const ok = await run(process.execPath, [SMOKE, '--launcher', process.execPath, '--binary', '/nonexistent/strata', '--binary', FAKE, '--model', 'unused',
    '--', '--check-solo', '--concurrency', '3', '--requests', '6', '--max-tokens', '8', '--ignore-eos']);
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /PASS: every request completed/);
  const bad = await run(process.execPath, [SMOKE, '--launcher', process.execPath, '--binary', FAKE, '--model', 'unused',
    '--', '--check-solo', '--concurrency', '3', '--requests', '6', '--max-tokens', '8', '--ignore-eos', '--url-typo']);
  assert.equal(bad.code, 1, bad.out);
  const skip = await run(process.execPath, [SMOKE, '--binary', '/nonexistent/strata', '--model', 'unused']);
  assert.equal(skip.code, 77);
  assert.match(skip.out, /SKIP: no server binary/);
});
