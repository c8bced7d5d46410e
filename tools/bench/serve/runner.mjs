// A phase: `count` requests, at most `concurrency` in flight, each client taking the next request as soon as
// its previous one ends (a closed loop, like benchmark_serving's --max-concurrency). The phase always ends:
// at the duration limit every open request is aborted and the ones not yet sent are reported as not sent.
//
// rampUpMs > 0 staggers the clients: client w sends its first request w * rampUpMs / concurrency after the
// start, so arrivals stay spread out instead of coming in waves of `concurrency` at once (requests of equal
// length keep the offsets). Those first `concurrency` requests ran while the load was still building: they
// come back marked rampUp, and the phase's steady part is what follows them.
//
// threads > 1 spreads the clients over that many worker threads (client w on thread w mod threads), each
// with its own event loop. On one loop, a window's chunks for every stream arrive together and are read one
// after another, so at 128 streams a stream's chunk waits for the ones read before it: time the server did
// not spend. The phase reports how busy the process was (CPU time of all its threads over wall time, so it
// can pass 1) and how late the event loops ran (perf_hooks' event-loop delay, the worst thread's).
import { Worker } from 'node:worker_threads';
import { driveClients, epochMs } from './drive.mjs';

const WORKER = new URL('./phase_worker.mjs', import.meta.url);

// Client count a thread: at most 16 streams an event loop, at most 8 threads.
export const autoThreads = (concurrency) => Math.min(8, Math.ceil(concurrency / 16));

// Starts a worker for `clients` and resolves once it is ready for the start message.
function startWorker(data) {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: data });
    w.once('error', reject);
    w.once('message', (m) => (m === 'ready' ? resolve(w) : reject(new Error(`worker said ${m}`))));
  });
}

const result = (w) =>
  new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
    // After the result this is a no-op; before it, the thread died without reporting.
    w.once('exit', (code) => reject(new Error(`a client thread exited (status ${code}) before reporting`)));
  });

// request: { url, headers, bodies, indexBase } (drive.mjs).
export async function runPhase({ count, concurrency, durationLimitMs, request, rampUpMs = 0, threads = 1 }) {
  const total = Math.min(concurrency, count);
  const nThreads = Math.max(1, Math.min(threads, total));
  const counterBuffer = new SharedArrayBuffer(4);
  const counter = new Int32Array(counterBuffer);
  const mine = (t) => Array.from({ length: total }, (_, w) => w).filter((w) => w % nThreads === t);
  const common = { total, count, rampUpMs, request };
  const workers = [];
  try {
    for (let t = 1; t < nThreads; t++) workers.push(await startWorker({ ...common, clients: mine(t), counterBuffer }));
    const cpu0 = process.cpuUsage();
    const t0 = epochMs();
    const deadline = t0 + durationLimitMs;
    const pending = workers.map((w) => result(w));
    for (const w of workers) w.postMessage({ t0, deadline });
    // Thread 0 is this one.
    const own = await driveClients({ ...common, clients: mine(0), counter, t0, deadline });
    const parts = [own, ...(await Promise.all(pending))];
    const durationMs = epochMs() - t0;
    const cpu = process.cpuUsage(cpu0);
    const records = new Array(count);
    for (const p of parts) for (const [i, r] of p.done) records[i] = r;
    const worst = (k) => Math.max(...parts.map((p) => p.loop[k]));
    const client = {
      threads: nThreads,
      cpu_fraction: durationMs > 0 ? (cpu.user + cpu.system) / 1000 / durationMs : 0,
      loop_delay_ms: { p50: worst('p50'), p99: worst('p99'), max: worst('max') },
    };
    const sent = records.filter((r) => r !== undefined);
    return { records: sent, notSent: count - sent.length, durationMs, hitLimit: parts.some((p) => p.aborted), client };
  } finally {
    for (const w of workers) w.terminate();
  }
}
