// A phase: `count` requests, at most `concurrency` in flight, each worker taking the next request as soon as
// its previous one ends (a closed loop, like benchmark_serving's --max-concurrency). The phase always ends:
// at the duration limit every open request is aborted and the ones not yet sent are reported as not sent.

export async function runPhase({ count, concurrency, durationLimitMs, send }) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), durationLimitMs);
  const records = new Array(count);
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count && !controller.signal.aborted) {
      const i = next++;
      records[i] = await send(i, controller.signal);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  } finally {
    clearTimeout(timer);
  }
  const durationMs = performance.now() - t0;
  const sent = records.filter((r) => r !== undefined);
  return { records: sent, notSent: count - sent.length, durationMs, hitLimit: controller.signal.aborted };
}
