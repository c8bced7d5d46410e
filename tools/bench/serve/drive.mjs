// The clients of one phase that one thread runs, in the main thread or in a worker thread (runner.mjs).
// Every thread takes request numbers from one shared counter, so the phase stays a single closed loop
// whatever the thread count: a client sends the next request as soon as its previous one ends.
//
// Times are epoch milliseconds (performance.timeOrigin + performance.now()), the clock all threads share;
// each record carries its send and end time relative to the phase start t0.
import { setMaxListeners } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { streamRequest } from './client.mjs';

export const epochMs = () => performance.timeOrigin + performance.now();

// Resolves after ms, or at once when signal aborts; leaves no listener on the signal either way.
export const sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const onAbort = () => (clearTimeout(t), resolve());
    const t = setTimeout(() => (signal.removeEventListener('abort', onAbort), resolve()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

// clients: the client numbers (0 .. total - 1) this thread runs; client w sends its first request
// w * rampUpMs / total after t0. counter: an Int32Array over a SharedArrayBuffer, the next request number.
// request: { url, headers, bodies, indexBase }: request i posts bodies[i] and is reported as indexBase + i.
// At the deadline (epoch ms) every open request is aborted and no more are sent.
// Resolves with { done: [[i, record]], loop: event-loop delay of this thread, aborted }.
export async function driveClients({ clients, total, counter, count, t0, deadline, rampUpMs, request }) {
  const controller = new AbortController();
  const signal = controller.signal;
  // Every request in flight listens on this one signal: allow one listener each (and the sleeps') without
  // Node's leak warning, which fires past 10.
  setMaxListeners(2 * clients.length + 10, signal);
  const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - epochMs()));
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const done = [];
  const client = async (w) => {
    await sleep(t0 + (w * rampUpMs) / total - epochMs(), signal);
    while (!signal.aborted) {
      const i = Atomics.add(counter, 0, 1);
      if (i >= count) break;
      const sentAtMs = epochMs() - t0;
      const r = await streamRequest({
        url: request.url, headers: request.headers, body: request.bodies[i], signal, index: request.indexBase + i,
      });
      r.sentAtMs = sentAtMs;
      r.endedAtMs = epochMs() - t0;
      r.rampUp = rampUpMs > 0 && i < total;
      done.push([i, r]);
    }
  };
  try {
    await Promise.all(clients.map((w) => client(w)));
  } finally {
    clearTimeout(timer);
    loop.disable();
  }
  // The histogram holds nanoseconds past the sampling interval (1 ms); no samples reads as NaN.
  const ms = (ns) => (Number.isFinite(ns) ? ns / 1e6 : 0);
  const delay = { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) };
  return { done, loop: delay, aborted: signal.aborted };
}
