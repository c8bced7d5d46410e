// Runs one e2e suite under `node --test`. Exits 77 (ctest: skipped) with the reason when the suite needs
// the `openai` package and tests/node/node_modules is absent; every other failure is a failure.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './lib/server.mjs';

const [file, ...flags] = process.argv.slice(2);
if (flags.includes('--needs-openai')) {
  const pkg = path.join(repoRoot, 'tests', 'node', 'node_modules', 'openai', 'package.json');
  if (!fs.existsSync(pkg)) {
    console.log(`SKIP: ${pkg} is absent; run 'npm ci --prefix tests/node' to install the openai SDK`);
    process.exit(77);
  }
}
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', file], { stdio: 'inherit' });
process.exit(r.status ?? 1);
