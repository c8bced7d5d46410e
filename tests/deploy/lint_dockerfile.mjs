// Lints the Dockerfile and .dockerignore for the rules this project's image depends on, which a generic
// linter (dockerfilelint, run beside this) does not know: multi-stage wiring, the README's build script, the
// runtime contract (non-root, /health, 0.0.0.0, /models) and a build context that holds the sources.
//
// usage: node lint_dockerfile.mjs DOCKERFILE DOCKERIGNORE [--self-test]
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";

// Instructions with their first line number; continuation lines joined, comments and parser directives dropped.
export function parse(text) {
  const out = [];
  let buf = "";
  let start = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "");
    if (!buf && /^\s*(#|$)/.test(line)) return;
    if (buf && /^\s*#/.test(line)) return; // comments inside a continued instruction
    if (!buf) start = i + 1;
    if (/\\\s*$/.test(line)) {
      buf += line.replace(/\\\s*$/, " ");
      return;
    }
    buf += line;
    const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(buf);
    out.push({ line: start, op: m[1].toUpperCase(), args: m[2].trim() });
    buf = "";
  });
  return out;
}

function stages(instructions) {
  const globalArgs = {};
  const list = [];
  for (const ins of instructions) {
    if (ins.op === "ARG" && list.length === 0) {
      const [k, v = ""] = ins.args.split("=");
      globalArgs[k.trim()] = v.replace(/^"|"$/g, "");
    } else if (ins.op === "FROM") {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      const image = m[1].replace(/\$\{?([A-Za-z_]+)\}?/g, (_, k) => globalArgs[k] ?? `\${${k}}`);
      list.push({ name: m[2] ?? String(list.length), image, line: ins.line, body: [] });
    } else if (list.length) list.at(-1).body.push(ins);
  }
  return list;
}

// Instructions that hold for a stage: its own, after those of the stages it is built FROM.
function inherited(all, stage) {
  const parent = all.find((s) => s.name === stage.image);
  return parent ? [...inherited(all, parent), ...stage.body] : stage.body;
}
const baseImage = (all, stage) => {
  const parent = all.find((s) => s.name === stage.image);
  return parent ? baseImage(all, parent) : stage.image;
};
const last = (list, op) => list.filter((i) => i.op === op).at(-1);
const execForm = (args) => {
  try {
    const v = JSON.parse(args);
    return Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
};

export function lintDockerfile(text, repoRoot) {
  const problems = [];
  const all = stages(parse(text));
  const names = new Set(all.map((s) => s.name));
  for (const s of all) {
    if (!names.has(s.image) || all.indexOf(all.find((x) => x.name === s.image)) >= all.indexOf(s)) {
      if (s.image.includes("${")) problems.push(`line ${s.line}: FROM ${s.image} uses an ARG without a default`);
      else if (!/:[^/]+$/.test(s.image) && !s.image.includes("@sha256:")) problems.push(`line ${s.line}: FROM ${s.image} has no tag`);
      else if (/:latest$/.test(s.image)) problems.push(`line ${s.line}: FROM ${s.image} follows latest`);
      if (!/^debian:12/.test(s.image)) problems.push(`line ${s.line}: ${s.image} is not Debian 12, the distribution the build scripts target`);
    }
    for (const ins of s.body) {
      const from = /--from=(\S+)/.exec(ins.args);
      if (ins.op === "COPY" && from) {
        const src = all.find((x) => x.name === from[1]);
        if (!src || all.indexOf(src) >= all.indexOf(s)) problems.push(`line ${ins.line}: COPY --from=${from[1]} names no earlier stage`);
      }
      if (ins.op === "ADD" && /https?:\/\//.test(ins.args)) problems.push(`line ${ins.line}: ADD of a URL; download with a checked RUN instead`);
      if (ins.op === "RUN" && /apt-get\s+install/.test(ins.args)) {
        if (!/--no-install-recommends/.test(ins.args)) problems.push(`line ${ins.line}: apt-get install without --no-install-recommends`);
        if (!/-y\b/.test(ins.args)) problems.push(`line ${ins.line}: apt-get install without -y would wait for an answer`);
        if (!/rm -rf \/var\/lib\/apt\/lists/.test(ins.args) && !/setup-build\.sh/.test(ins.args))
          problems.push(`line ${ins.line}: apt lists are not removed in the same layer`);
      }
      for (const m of ins.args.matchAll(/(?:^|\s)((?:scripts|deploy)\/[\w./-]+\.sh)/g))
        if (ins.op === "RUN" && !existsSync(path.join(repoRoot, m[1]))) problems.push(`line ${ins.line}: ${m[1]} does not exist in the repository`);
    }
  }
  const builtWith = (stage, mode) =>
    inherited(all, stage).some((i) => i.op === "RUN" && new RegExp(`scripts/setup-build\\.sh[^&;]*--cuda ${mode}\\b`).test(i.args));
  const targets = { cpu: "off", cuda: "on" };
  for (const [target, mode] of Object.entries(targets)) {
    const stage = all.find((s) => s.name === target);
    if (!stage) {
      problems.push(`no ${target} target`);
      continue;
    }
    const ins = inherited(all, stage);
    const copies = ins.filter((i) => i.op === "COPY" && /--from=/.test(i.args)).map((i) => /--from=(\S+)/.exec(i.args)[1]);
    if (!copies.some((c) => all.find((s) => s.name === c && builtWith(s, mode))))
      problems.push(`${target}: copies from no stage built by scripts/setup-build.sh --cuda ${mode}`);
    if (baseImage(all, stage) !== "debian:12-slim" && !/^debian:12[.\d]*-slim/.test(baseImage(all, stage)))
      problems.push(`${target}: runs on ${baseImage(all, stage)}, not debian:12-slim`);
    const user = last(ins, "USER");
    if (!user || !/^[1-9]\d*(:\d+)?$/.test(user.args))
      problems.push(`${target}: USER must be a numeric non-root uid (Kubernetes runAsNonRoot checks the number)`);
    const hc = last(ins, "HEALTHCHECK");
    if (!hc || !/\/health\b/.test(hc.args)) problems.push(`${target}: HEALTHCHECK must probe /health`);
    else {
      const opts = hc.args.split(/\s+CMD\s+/)[0].split(/\s+/).filter((o) => o.startsWith("--"));
      for (const o of opts)
        if (!/^--(interval|timeout|start-period|start-interval|retries)=\d+[smh]?$/.test(o)) problems.push(`${target}: HEALTHCHECK option ${o} is not valid`);
      if (!opts.some((o) => o.startsWith("--start-period="))) problems.push(`${target}: HEALTHCHECK needs --start-period for model loading`);
    }
    const command = [...(execForm(last(ins, "ENTRYPOINT")?.args ?? "[]") ?? []), ...(execForm(last(ins, "CMD")?.args ?? "[]") ?? [])];
    if (!command.length) problems.push(`${target}: ENTRYPOINT and CMD must be in exec form, so SIGTERM reaches the server`);
    const host = command.indexOf("--host");
    if (!command.includes("serve") || command[host + 1] !== "0.0.0.0") problems.push(`${target}: the command must be strata serve --host 0.0.0.0`);
    if (!command.includes("/models")) problems.push(`${target}: the command must load the model from /models`);
    if (!ins.some((i) => i.op === "EXPOSE" && /\b8080\b/.test(i.args))) problems.push(`${target}: EXPOSE 8080 is missing`);
  }
  if (all.at(-1)?.name !== "cuda") problems.push("the last stage (the default target) must be cuda");
  return problems;
}

// .dockerignore patterns as Docker reads them: path globs from the context root, ** across directories,
// a leading ! re-includes; the last matching pattern wins.
function ignoreMatcher(text) {
  const rules = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const negate = l.startsWith("!");
      const pat = (negate ? l.slice(1) : l).replace(/^\/+/, "").replace(/\/+$/, "");
      const re = pat
        .split("/")
        .map((part) => (part === "**" ? "(?:.*)" : part.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")))
        .join("/")
        .replace(/\(\?:\.\*\)\//g, "(?:.*/)?");
      return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
    });
  return (file) => rules.reduce((ignored, r) => (r.re.test(file) ? !r.negate : ignored), false);
}

export function lintDockerignore(text) {
  const ignored = ignoreMatcher(text);
  const problems = [];
  const needed = ["CMakeLists.txt", "scripts/setup-build.sh", "scripts/deps.sh", "deploy/docker/stage-runtime.sh", "server/server.hpp",
    "engine/core/engine.hpp", "config/CMakeLists.txt", "cuda/CMakeLists.txt", "tests/CMakeLists.txt",
    "models/strata-tiny/model.safetensors", "models/strata-tiny/tokenizer.json"];
  const unwanted = [".git/HEAD", "build/strata", "build-cpu/CMakeCache.txt", "tests/node/node_modules/yaml/package.json",
    "tests/deploy/node_modules/yaml/package.json", "engine/__pycache__/x.pyc", ".whl/x.whl"];
  for (const f of needed) if (ignored(f)) problems.push(`.dockerignore drops ${f}, which the build needs`);
  for (const f of unwanted) if (!ignored(f)) problems.push(`.dockerignore sends ${f} into the build context`);
  return problems;
}

function main(argv) {
  const [dockerfile, dockerignore] = argv.filter((a) => !a.startsWith("--"));
  if (!dockerignore) {
    console.error("usage: node lint_dockerfile.mjs DOCKERFILE DOCKERIGNORE [--self-test]");
    return 2;
  }
  const root = path.dirname(path.resolve(dockerfile));
  const text = readFileSync(dockerfile, "utf8");
  const ignoreText = readFileSync(dockerignore, "utf8");
  let passed = 0;
  let failed = 0;
  const report = (ok, what, details = []) => {
    ok ? passed++ : failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${what}${details.length ? `\n  - ${details.join("\n  - ")}` : ""}`);
  };
  const df = lintDockerfile(text, root);
  report(df.length === 0, `${dockerfile} follows the image rules`, df);
  const di = lintDockerignore(ignoreText);
  report(di.length === 0, `${dockerignore} keeps the sources and drops build outputs`, di);

  if (argv.includes("--self-test")) {
    const cases = [
      ["a runtime running as root", (t) => t.replace(/^USER .*$/m, "USER root"), "numeric non-root"],
      ["a HEALTHCHECK on another path", (t) => t.replace(/\/health"/, '/metrics"'), "must probe /health"],
      ["a server bound to loopback", (t) => t.replace('"--host", "0.0.0.0"', '"--host", "127.0.0.1"'), "--host 0.0.0.0"],
      ["a cuda target built without CUDA", (t) => t.replace("--cuda on", "--cuda off"), "--cuda on"],
      ["a base image following latest", (t) => t.replace("ARG DEBIAN_SLIM_IMAGE=debian:12-slim", "ARG DEBIAN_SLIM_IMAGE=debian:latest"), "latest"],
      ["a COPY from a stage that does not exist", (t) => t.replace("--from=build-cpu", "--from=build-arm"), "names no earlier stage"],
      ["apt-get install pulling recommends", (t) => t.replace("install -y --no-install-recommends ca-certificates curl tini", "install -y ca-certificates curl tini"), "--no-install-recommends"],
      ["a shell-form command", (t) => t.replace(/^CMD \[.*\]$/m, "CMD strata serve --host 0.0.0.0 --model /models").replace(/^ENTRYPOINT .*$/m, ""), "exec form"],
      ["a healthcheck without a start period", (t) => t.replace(/ --start-period=\d+s/, ""), "--start-period"],
    ];
    for (const [what, mutate, reason] of cases) {
      const got = lintDockerfile(mutate(text), root);
      report(got.some((p) => p.includes(reason)), `refuses ${what}`, got.some((p) => p.includes(reason)) ? [] : [`got: ${JSON.stringify(got)}`]);
    }
    const ignoreCases = [
      ["a .dockerignore that drops the scripts", (t) => `${t}\nscripts\n`, "drops scripts/setup-build.sh"],
      ["a .dockerignore that keeps node_modules", (t) => t.replace("**/node_modules", ""), "node_modules"],
    ];
    for (const [what, mutate, reason] of ignoreCases) {
      const got = lintDockerignore(mutate(ignoreText));
      report(got.some((p) => p.includes(reason)), `refuses ${what}`, got.some((p) => p.includes(reason)) ? [] : [`got: ${JSON.stringify(got)}`]);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
