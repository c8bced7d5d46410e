// Starts the real `strata serve` on a free loopback port and stops it with SIGTERM. The port is read from
// the "listening on http://HOST:PORT" line the binary prints once it is up.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const strataBin = process.env.STRATA_BIN || path.join(repoRoot, 'build', 'strata');
export const modelDir = process.env.STRATA_E2E_MODEL || path.join(repoRoot, 'tests', 'data', 'models', 'qwen3');

export async function startServer(extraArgs = [], { timeoutMs = 120000 } = {}) {
  if (!fs.existsSync(strataBin)) throw new Error(`strata binary not found at ${strataBin} (set STRATA_BIN)`);
  const args = ['serve', '--model', modelDir, '--host', '127.0.0.1', '--port', '0', ...extraArgs];
  const proc = spawn(strataBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`strata did not start in ${timeoutMs} ms:\n${log}`)), timeoutMs);
    const onData = (chunk) => {
      log += chunk.toString();
      const m = log.match(/listening on (http:\/\/[^\s:]+:(\d+))/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`strata exited (code ${code}, signal ${signal}) before listening:\n${log}`));
    });
  });
  // Keep draining the pipes so the server never blocks on a full one.
  const port = Number(new URL(url).port);
  return {
    url,
    port,
    proc,
    log: () => log,
    alive: () => proc.exitCode === null && proc.signalCode === null,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 60000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

// Value of one Prometheus sample, e.g. metric(text, 'strata_slots_busy'); NaN when absent.
export function metric(text, name) {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (m && m[1] === name) return Number(m[3]);
  }
  return NaN;
}

export async function waitFor(cond, { timeoutMs = 10000, stepMs = 50 } = {}) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return cond();
}
