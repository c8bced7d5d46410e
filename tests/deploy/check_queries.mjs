// Checks every PromQL query that deploy/ runs against strata's metrics: the Grafana dashboard's panels, the
// prometheus-adapter rule and the alert rules.
//   - each query parses (promtool check rules, on a generated file of recording rules);
//   - each strata_* series it names is in tests/deploy/metrics.txt, histograms only as _bucket/_sum/_count
//     and counters and gauges only by their own name, so a renamed metric cannot empty a panel silently;
//   - the dashboard shows what operators need (issue #8's list), and every metric strata serves is shown on
//     the dashboard or watched by an alert;
//   - every panel reads the dashboard's data-source variable, with a unique id.
//
// usage: node check_queries.mjs DASHBOARD.json ADAPTER_CONFIG.yaml ALERT_RULES.yaml [--self-test]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import YAML from "yaml";

const metricsFile = new URL("./metrics.txt", import.meta.url);
const contract = new Map(
  readFileSync(metricsFile, "utf8")
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("#"))
    .map((l) => l.trim().split(/\s+/))
    .map(([name, type]) => [name, type]),
);

// What the dashboard must show, each as a pattern over panel titles.
const requiredPanels = [
  ["time to first token", /first token/i],
  ["inter-token latency", /inter-token/i],
  ["throughput", /throughput/i],
  ["queue", /^queue$/i],
  ["slots", /slots/i],
  ["KV cache usage", /kv cache/i],
  ["prefix-cache hits", /prefix cache/i],
  ["speculative acceptance", /speculative/i],
  ["errors", /errors/i],
  ["watchdog stalls", /watchdog/i],
  ["engine restarts", /restarts/i],
];

// Grafana's variables, replaced by values a real dashboard could have, so that promtool parses the query.
const grafanaValues = (expr) =>
  expr.replaceAll("$__rate_interval", "5m").replaceAll("$__interval", "1m").replaceAll("$namespace", "strata").replaceAll("$pod", ".*");
// prometheus-adapter's templates, filled as the adapter fills them for a Pods metric.
const adapterValues = (expr) =>
  expr
    .replaceAll("<<.Series>>", "strata_requests_waiting")
    .replaceAll("<<.LabelMatchers>>", 'namespace="strata",pod=~"strata-a|strata-b"')
    .replaceAll("<<.GroupBy>>", "pod");

function seriesProblems(expr) {
  const problems = [];
  const used = new Set();
  for (const [name] of expr.matchAll(/\bstrata_[a-z0-9_]+/g)) {
    const base = name.replace(/_(bucket|sum|count)$/, "");
    const type = contract.get(name) ?? contract.get(base);
    if (!type) problems.push(`${name} is not a strata metric (tests/deploy/metrics.txt)`);
    else if (type === "histogram" && name === base) problems.push(`${name} is a histogram: use ${name}_bucket, _sum or _count`);
    else if (type !== "histogram" && name !== base && !contract.has(name)) problems.push(`${name}: only histograms have ${name.slice(base.length)}`);
    used.add(contract.has(name) ? name : base);
  }
  return { problems, used };
}

function promtoolProblems(exprs) {
  const dir = mkdtempSync(path.join(tmpdir(), "strata-queries-"));
  try {
    const file = path.join(dir, "queries.yaml");
    const rules = exprs.map(([where, expr], i) => ({ record: `strata_check:query_${i}`, expr, labels: { where } }));
    writeFileSync(file, YAML.stringify({ groups: [{ name: "deploy-queries", rules }] }));
    const run = spawnSync("promtool", ["check", "rules", file], { encoding: "utf8" });
    if (run.error) return [`cannot run promtool: ${run.error.message}`];
    if (run.status === 0) return [];
    return [`promtool rejects a query:\n${run.stdout}${run.stderr}`];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function checkAll(dashboard, adapter, alerts) {
  const failures = [];
  const exprs = [];
  const ids = new Set();
  const panels = (dashboard.panels ?? []).filter((p) => p.type !== "row");
  for (const p of panels) {
    if (ids.has(p.id)) failures.push(`panel id ${p.id} is used twice`);
    ids.add(p.id);
    if (p.datasource?.uid !== "${datasource}") failures.push(`panel "${p.title}" must use the \${datasource} variable`);
    if (!(p.targets ?? []).length) failures.push(`panel "${p.title}" has no query`);
    for (const t of p.targets ?? []) exprs.push([`panel "${p.title}" ${t.refId}`, grafanaValues(t.expr ?? "")]);
  }
  for (const [what, pattern] of requiredPanels)
    if (!panels.some((p) => pattern.test(p.title))) failures.push(`the dashboard has no panel for ${what}`);
  for (const [i, r] of (adapter.rules ?? []).entries()) exprs.push([`adapter rule ${i + 1}`, adapterValues(r.metricsQuery ?? "")]);

  const shown = new Set();
  for (const [where, expr] of exprs) {
    const { problems, used } = seriesProblems(expr);
    problems.forEach((p) => failures.push(`${where}: ${p}`));
    used.forEach((m) => shown.add(m));
  }
  for (const g of alerts.groups ?? [])
    for (const r of g.rules ?? []) {
      const { problems, used } = seriesProblems(r.expr ?? "");
      problems.forEach((p) => failures.push(`alert ${r.alert ?? r.record}: ${p}`));
      used.forEach((m) => shown.add(m));
    }
  for (const name of contract.keys())
    if (!shown.has(name)) failures.push(`${name} is served but neither shown on the dashboard nor alerted on`);
  failures.push(...promtoolProblems(exprs));
  return failures;
}

function main(argv) {
  const [dashFile, adapterFile, alertsFile] = argv.filter((a) => !a.startsWith("--"));
  if (!alertsFile) {
    console.error("usage: node check_queries.mjs DASHBOARD.json ADAPTER_CONFIG.yaml ALERT_RULES.yaml [--self-test]");
    return 2;
  }
  const dashboard = JSON.parse(readFileSync(dashFile, "utf8"));
  const adapter = YAML.parse(readFileSync(adapterFile, "utf8"));
  const alerts = YAML.parse(readFileSync(alertsFile, "utf8"));
  let passed = 0;
  let failed = 0;
  const report = (ok, what, details = []) => {
    if (ok) passed++;
    else failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${what}${details.length ? `\n  - ${details.join("\n  - ")}` : ""}`);
  };

  const failures = checkAll(dashboard, adapter, alerts);
  report(failures.length === 0, "dashboard, adapter and alert queries parse and read only strata's metrics", failures);

  if (argv.includes("--self-test")) {
    // Each broken copy must be refused, and for the reason given.
    const cases = [
      ["a panel reading a renamed metric", (d) => (d.panels.find((p) => p.targets).targets[0].expr = "sum(strata_requests_queued)"), "not a strata metric"],
      ["a histogram read without _bucket", (d) => (d.panels.find((p) => p.targets).targets[0].expr = "sum(strata_time_to_first_token_seconds)"), "is a histogram"],
      ["a query that does not parse", (d) => (d.panels.find((p) => p.targets).targets[0].expr = "sum(rate(strata_requests_total[5m])"), "promtool rejects"],
      ["a dashboard without the watchdog panel", (d) => (d.panels = d.panels.filter((p) => !/watchdog/i.test(p.title))), "no panel for watchdog"],
      ["a panel on a fixed data source", (d) => (d.panels.find((p) => p.targets).datasource = { uid: "prom-1" }), "${datasource}"],
    ];
    for (const [what, mutate, reason] of cases) {
      const copy = structuredClone(dashboard);
      mutate(copy);
      const got = checkAll(copy, adapter, alerts);
      report(got.some((f) => f.includes(reason)), `refuses ${what}`, got.some((f) => f.includes(reason)) ? [] : got);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
