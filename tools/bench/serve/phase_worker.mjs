// A worker thread of a phase (runner.mjs): says it is ready, waits for the start message (t0 and the
// deadline), runs its clients with driveClients and posts what they measured.
import { parentPort, workerData } from 'node:worker_threads';
import { driveClients } from './drive.mjs';

const { clients, total, counterBuffer, count, rampUpMs, request } = workerData;
parentPort.once('message', async ({ t0, deadline }) => {
  try {
    const counter = new Int32Array(counterBuffer);
    parentPort.postMessage(await driveClients({ clients, total, counter, count, t0, deadline, rampUpMs, request }));
  } finally {
    parentPort.close();
  }
});
parentPort.postMessage('ready');
