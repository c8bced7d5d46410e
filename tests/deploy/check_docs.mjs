// Holds docs/OPERATIONS.md to the files it documents: every served metric is explained, every failure mode
// has its section with the answer the client gets and the metric that shows it, and the numbers quoted for
// the Deployment are the Deployment's.
//
// usage: node check_docs.mjs OPERATIONS.md RENDERED_K8S.yaml
import { readFileSync } from "node:fs";
import YAML from "yaml";

// Failure mode -> what its section must say (issue #5 and #8): the client's answer and the evidence.
const failureModes = {
  "watchdog-stall": ["503", "engine_stalled", "strata_watchdog_stalls_total"],
  "repeated-recovery": ["/health", "strata_engine_restarts_total", "restart"],
  "queue-full": ["429", "strata_requests_waiting"],
  draining: ["503", "/ready"],
  "client-disconnect": ["slot", "strata_slots_busy"],
  "kv-cache-full": ["400", "503", "strata_kv_cache_usage_ratio"],
  "bad-model": ["exit", "kubectl logs"],
};

function sections(text) {
  const out = {};
  const parts = text.split(/<a id="([a-z0-9-]+)"><\/a>/);
  for (let i = 1; i < parts.length; i += 2) out[parts[i]] = parts[i + 1].split(/\n#{1,3} (?!#)/).slice(0, 2).join("\n");
  return out;
}

function main([docFile, renderedFile]) {
  if (!renderedFile) {
    console.error("usage: node check_docs.mjs OPERATIONS.md RENDERED_K8S.yaml");
    return 2;
  }
  const text = readFileSync(docFile, "utf8");
  const docs = YAML.parseAllDocuments(readFileSync(renderedFile, "utf8")).map((d) => d.toJS()).filter(Boolean);
  let passed = 0;
  let failed = 0;
  const report = (problems, what) => {
    problems.length ? failed++ : passed++;
    console.log(`${problems.length ? "FAIL" : "ok  "} ${what}${problems.length ? `\n  - ${problems.join("\n  - ")}` : ""}`);
  };

  const metrics = readFileSync(new URL("./metrics.txt", import.meta.url), "utf8")
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("#"))
    .map((l) => l.split(/\s+/)[0]);
  report(metrics.filter((m) => !text.includes(`\`${m}`)).map((m) => `${m} is not explained`), "every served metric is explained");

  const secs = sections(text);
  for (const [mode, words] of Object.entries(failureModes)) {
    const body = secs[mode];
    report(body === undefined ? [`no section <a id="${mode}">`] : words.filter((w) => !body.includes(w)).map((w) => `does not mention ${w}`),
      `failure mode "${mode}" says what the server does and what shows it`);
  }

  const deploy = docs.find((d) => d.kind === "Deployment");
  const c = deploy.spec.template.spec.containers[0];
  const flag = (name) => (c.args.find((a) => a.startsWith(`--${name}=`)) ?? "").split("=")[1];
  const facts = [
    [`\`terminationGracePeriodSeconds\` | ${deploy.spec.template.spec.terminationGracePeriodSeconds} |`, "grace period"],
    [`preStop sleep ${c.lifecycle.preStop.exec.command[1]} s + \`--shutdown-timeout\` ${flag("shutdown-timeout")} s`, "grace formula"],
    [`${c.startupProbe.failureThreshold} x ${c.startupProbe.periodSeconds} s`, "startup window"],
    [`\`/health\`, ${c.livenessProbe.failureThreshold} x ${c.livenessProbe.periodSeconds} s`, "liveness"],
    [`\`/ready\`, ${c.readinessProbe.failureThreshold} x ${c.readinessProbe.periodSeconds} s`, "readiness"],
    [`--shutdown-timeout=${flag("shutdown-timeout")}`, "shutdown flag"],
  ];
  report(facts.filter(([s]) => !text.includes(s)).map(([s, what]) => `${what}: expected "${s}" from the Deployment`),
    "the numbers quoted for the Deployment are the Deployment's");
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
