// A phase: `count` requests, at most `concurrency` in flight, each worker taking the next request as soon as
// its previous one ends (a closed loop, like benchmark_serving's --max-concurrency). The phase always ends:
// at the duration limit every open request is aborted and the ones not yet sent are reported as not sent.
//
// rampUpMs > 0 staggers the workers: worker w sends its first request w * rampUpMs / concurrency after the
// start, so arrivals stay spread out instead of coming in waves of `concurrency` at once (requests of equal
// length keep the offsets). Those first `concurrency` requests ran while the load was still building: they
// come back marked rampUp, and the phase's steady part is what follows them.
//
// The phase also reports how busy this process was (CPU time over wall time) and how late its event loop
// ran (perf_hooks' event-loop delay): every stream's chunks are read on this one loop, so a loop that runs
// milliseconds late adds that much to the TTFT and ITL it measures.
import { setMaxListeners } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';

// Resolves after ms, or at once when signal aborts; leaves no listener on the signal either way.
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const onAbort = () => (clearTimeout(t), resolve());
    const t = setTimeout(() => (signal.removeEventListener('abort', onAbort), resolve()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

export async function runPhase({ count, concurrency, durationLimitMs, send, rampUpMs = 0 }) {
  const controller = new AbortController();
  // Every request in flight listens on this one signal: allow one listener each (and the sleeps') without
  // Node's leak warning, which fires past 10.
  setMaxListeners(2 * Math.min(concurrency, count) + 10, controller.signal);
  const timer = setTimeout(() => controller.abort(), durationLimitMs);
  const records = new Array(count);
  let next = 0;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const workers = Math.min(concurrency, count);
  const worker = async (w) => {
    await sleep((w * rampUpMs) / workers, controller.signal);
    while (next < count && !controller.signal.aborted) {
      const i = next++;
      const sentAtMs = performance.now() - t0;
      const r = await send(i, controller.signal);
      r.sentAtMs = sentAtMs;
      r.endedAtMs = performance.now() - t0;
      r.rampUp = rampUpMs > 0 && i < workers;
      records[i] = r;
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  } finally {
    clearTimeout(timer);
  }
  const durationMs = performance.now() - t0;
  loop.disable();
  const cpu = process.cpuUsage(cpu0);
  // The histogram holds nanoseconds past the sampling interval (1 ms); no samples reads as NaN.
  const ms = (ns) => (Number.isFinite(ns) ? ns / 1e6 : 0);
  const client = {
    cpu_fraction: durationMs > 0 ? (cpu.user + cpu.system) / 1000 / durationMs : 0,
    loop_delay_ms: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) },
  };
  const sent = records.filter((r) => r !== undefined);
  return { records: sent, notSent: count - sent.length, durationMs, hitLimit: controller.signal.aborted, client };
}
