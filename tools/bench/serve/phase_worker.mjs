// A worker thread of a phase (runner.mjs): says it is ready, waits for the start message (t0 and the
// deadline), runs its clients with driveClients and posts what they measured.
import { parentPort, workerData } from 'node:worker_threads';
import { driveClients, epochMs } from './drive.mjs';

const { clients, total, counterBuffer, count, rampUpMs, request } = workerData;
parentPort.once('message', async ({ t0, deadline }) => {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - epochMs()));
  try {
    const res = await driveClients({
      clients, total, counter: new Int32Array(counterBuffer), count, t0, rampUpMs, signal: controller.signal, request,
    });
    parentPort.postMessage({ ...res, aborted: controller.signal.aborted });
  } finally {
    clearTimeout(timer);
    parentPort.close();
  }
});
parentPort.postMessage('ready');
