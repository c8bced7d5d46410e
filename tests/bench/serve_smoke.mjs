#!/usr/bin/env node
// CI small-scale serving run: start `strata serve --port 0` on loopback, read the real port from its
// `listening on http://HOST:PORT` line, run bench_serve --check-solo (every request must complete and equal
// its solo run), then SIGTERM the server and require a clean exit. Exit 77 (ctest SKIP_RETURN_CODE) only when
// no server binary exists; every other problem is a failure with the reason printed.
//
//   node serve_smoke.mjs --binary PATH [--binary PATH ...] --model DIR [--launcher PROG] [-- bench args]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const benchTool = path.resolve(here, '../../tools/bench/bench_serve.mjs');

const binaries = [];
let model = null;
let launcher = null;
let benchArgs = ['--check-solo', '--concurrency', '6', '--requests', '12', '--max-tokens', '64', '--prompt-tokens', '48',
  '--temperature', '0', '--ignore-eos', '--duration-limit', '240'];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--binary') binaries.push(argv[++i]);
  else if (argv[i] === '--model') model = argv[++i];
  else if (argv[i] === '--launcher') launcher = argv[++i];
  else if (argv[i] === '--') {
    benchArgs = argv.slice(i + 1);
    break;
  } else {
    console.error(`serve_smoke: unknown argument '${argv[i]}'`);
    process.exit(2);
  }
}
if (!model) {
  console.error('serve_smoke: --model DIR is required');
  process.exit(2);
}
const binary = binaries.find((b) => existsSync(b));
if (!binary) {
  console.log(`SKIP: no server binary at ${binaries.join(' or ')} (build the 'strata' target first)`);
  process.exit(SKIP);
}

const fail = (msg) => {
  console.error(`FAIL: ${msg}`);
  process.exitCode = 1;
};

function waitExit(child, ms) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve({ code: child.exitCode, signal: child.signalCode });
    const t = setTimeout(() => resolve(null), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal });
    });
  });
}

const serverArgv = ['serve', '--host', '127.0.0.1', '--port', '0', '--model', model];
const cmd = launcher ?? binary;
const args = launcher ? [binary, ...serverArgv] : serverArgv;
console.log(`starting: ${cmd} ${args.join(' ')}`);
const server = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
const port = await new Promise((resolve) => {
  const timer = setTimeout(() => resolve(null), 120000);
  const onData = (d) => {
    const s = d.toString();
    log += s;
    process.stdout.write(s.replace(/^(?=.)/gm, '[server] '));
    const m = log.match(/listening on https?:\/\/(?:\[[^\]]*\]|[^\s:"/]+):(\d+)/);
    if (m) {
      clearTimeout(timer);
      resolve(Number(m[1]));
    }
  };
  server.stdout.on('data', onData);
  server.stderr.on('data', onData);
  server.once('exit', () => {
    clearTimeout(timer);
    resolve(null);
  });
});

const dir = mkdtempSync(path.join(tmpdir(), 'bench-smoke-'));
try {
  if (port === null) {
    fail(`the server exited or printed no 'listening on http://HOST:PORT' line within 120 s (exit ${server.exitCode})`);
  } else {
    const json = path.join(dir, 'bench.json');
    const bench = spawn(process.execPath, [benchTool, '--url', `http://127.0.0.1:${port}`, '--json', json, ...benchArgs], { stdio: 'inherit' });
    const benchExit = await waitExit(bench, 300000);
    if (benchExit === null) {
      bench.kill('SIGKILL');
      fail('bench_serve did not finish within 300 s');
    } else if (benchExit.code !== 0) {
      fail(`bench_serve exited with ${benchExit.code ?? benchExit.signal}`);
    } else {
      const r = JSON.parse(readFileSync(json, 'utf8'));
      const levels = [r.solo, ...r.levels].filter(Boolean);
      for (const l of levels)
        if (l.completed !== r.config.requests) fail(`concurrency ${l.concurrency}: ${l.completed}/${r.config.requests} requests completed`);
      if (r.config.check_solo && !(r.check_solo && r.check_solo.passed && r.check_solo.compared === r.config.requests * r.levels.length))
        fail(`check-solo did not compare every request: ${JSON.stringify(r.check_solo && { passed: r.check_solo.passed, compared: r.check_solo.compared })}`);
      if (r.config.ignore_eos)
        for (const l of levels)
          for (const q of l.per_request)
            if (q.output_tokens !== r.config.max_tokens)
              fail(`request ${q.index} at concurrency ${l.concurrency} produced ${q.output_tokens} tokens with ignore_eos, expected ${r.config.max_tokens}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (server.exitCode === null && server.signalCode === null) {
    server.kill('SIGTERM');
    const ended = await waitExit(server, 60000);
    if (ended === null) {
      server.kill('SIGKILL');
      fail('the server did not exit within 60 s of SIGTERM');
    } else if (ended.code !== 0) {
      fail(`the server exited with ${ended.code ?? ended.signal} after SIGTERM, expected 0`);
    }
  }
}
if (process.exitCode !== 1) console.log('PASS: every request completed, outputs equal their solo runs, the server stopped cleanly');
