// Checks the invariants that tie the deployment files to each other and to the server, which no schema can:
// probes on the server's endpoints, a grace period that covers the drain, GPUs requested as whole devices,
// the image's non-root user, selectors that select, and an autoscaler metric that the adapter really serves.
//
// usage: node check_k8s_policy.mjs RENDERED_K8S.yaml ADAPTER_CONFIG.yaml DOCKERFILE ALERT_RULES.yaml [--self-test]
// With --self-test it also breaks each invariant in a copy of the manifests and requires the matching check to
// fail, so that no check here can pass vacuously.
import { readFileSync } from "node:fs";
import YAML from "yaml";

const argFlag = (args, name) => {
  const prefix = `--${name}=`;
  const hit = args.find((a) => a.startsWith(prefix));
  return hit === undefined ? undefined : hit.slice(prefix.length);
};
// Key order is not meaning (kustomize sorts keys when it renders), so compare with keys sorted.
const canonical = (v) =>
  Array.isArray(v) ? v.map(canonical)
  : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]))
  : v;
const matches = (selector, labels) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v) && Object.keys(selector ?? {}).length > 0;

// Each check returns a list of problems (empty = holds).
const checks = {
  "probes use /health for startup and liveness and /ready for readiness"({ container }) {
    const p = [];
    const path = (probe) => probe?.httpGet?.path;
    if (path(container.startupProbe) !== "/health") p.push("startupProbe must GET /health (503 while loading)");
    if (path(container.livenessProbe) !== "/health") p.push("livenessProbe must GET /health");
    if (path(container.readinessProbe) !== "/ready") p.push("readinessProbe must GET /ready");
    const s = container.startupProbe ?? {};
    const window = (s.periodSeconds ?? 10) * (s.failureThreshold ?? 3);
    if (window < 300) p.push(`startupProbe allows ${window}s of loading; a large model needs at least 300s`);
    for (const probe of [container.startupProbe, container.livenessProbe, container.readinessProbe]) {
      if (probe && probe.httpGet?.port !== "http") p.push(`probe on ${path(probe)} must use the named port http`);
    }
    return p;
  },
  "the server listens on all interfaces at the container's http port"({ container }) {
    const p = [];
    const http = (container.ports ?? []).find((x) => x.name === "http");
    if (!http) return ["the container has no port named http"];
    if (argFlag(container.args ?? [], "host") !== "0.0.0.0") p.push("args must include --host=0.0.0.0");
    const port = Number(argFlag(container.args ?? [], "port") ?? 8080);
    if (port !== http.containerPort) p.push(`--port=${port} but the http containerPort is ${http.containerPort}`);
    return p;
  },
  "terminationGracePeriodSeconds covers preStop plus --shutdown-timeout"({ pod, container }) {
    const timeout = Number(argFlag(container.args ?? [], "shutdown-timeout"));
    if (!Number.isFinite(timeout)) return ["args must set --shutdown-timeout so the grace period can match it"];
    const cmd = container.lifecycle?.preStop?.exec?.command ?? [];
    const sleep = cmd[0] === "sleep" ? Number(cmd[1]) : Number(container.lifecycle?.preStop?.sleep?.seconds);
    if (!Number.isFinite(sleep) || sleep <= 0) return ["preStop must sleep so endpoints drop the pod before SIGTERM"];
    const grace = pod.terminationGracePeriodSeconds ?? 30;
    const need = sleep + timeout;
    if (grace <= need) return [`grace ${grace}s must exceed preStop ${sleep}s + shutdown-timeout ${timeout}s = ${need}s`];
    if (grace > need + 30) return [`grace ${grace}s is far above preStop + shutdown-timeout = ${need}s: a stuck pod lingers`];
    return [];
  },
  "GPUs and memory are requested as whole, guaranteed resources"({ container }) {
    const p = [];
    const req = container.resources?.requests ?? {};
    const lim = container.resources?.limits ?? {};
    if (!lim["nvidia.com/gpu"]) p.push("limits must set nvidia.com/gpu");
    if (String(req["nvidia.com/gpu"]) !== String(lim["nvidia.com/gpu"])) p.push("nvidia.com/gpu requests must equal limits");
    if (!/^[1-9][0-9]*$/.test(String(lim["nvidia.com/gpu"] ?? ""))) p.push("nvidia.com/gpu must be a whole number");
    if (!lim.memory || req.memory !== lim.memory) p.push("memory requests must equal limits (no OOM kill under pressure)");
    return p;
  },
  "the pod runs as the image's non-root user with a read-only root filesystem"({ pod, container, dockerUid }) {
    const p = [];
    const psc = pod.securityContext ?? {};
    const csc = container.securityContext ?? {};
    if (psc.runAsNonRoot !== true) p.push("pod securityContext.runAsNonRoot must be true");
    const uid = csc.runAsUser ?? psc.runAsUser;
    if (!(uid > 0)) p.push("runAsUser must be a non-zero uid");
    if (uid !== dockerUid) p.push(`runAsUser ${uid} differs from the Dockerfile's USER ${dockerUid}`);
    if (csc.readOnlyRootFilesystem !== true) p.push("readOnlyRootFilesystem must be true");
    if (csc.allowPrivilegeEscalation !== false) p.push("allowPrivilegeEscalation must be false");
    if (!(csc.capabilities?.drop ?? []).includes("ALL")) p.push("capabilities must drop ALL");
    return p;
  },
  "config, API keys and models come from a ConfigMap, a Secret and a read-only volume"({ pod, container, byKind }) {
    const p = [];
    const args = container.args ?? [];
    const mountOf = (file) =>
      (container.volumeMounts ?? []).find((m) => file && (file === m.mountPath || file.startsWith(`${m.mountPath}/`)));
    const volume = (m) => (pod.volumes ?? []).find((v) => v.name === m?.name);
    const cfg = volume(mountOf(argFlag(args, "config")));
    if (!cfg?.configMap) p.push("--config must point into a ConfigMap volume");
    else if (!(byKind.ConfigMap ?? []).some((c) => c.metadata.name === cfg.configMap.name))
      p.push(`ConfigMap ${cfg.configMap.name} is not among the manifests`);
    if (!volume(mountOf(argFlag(args, "api-key-file")))?.secret) p.push("--api-key-file must point into a Secret volume");
    const modelMount = mountOf(argFlag(args, "model"));
    if (!modelMount || modelMount.readOnly !== true || !volume(modelMount)) p.push("--model must be a read-only mounted volume");
    if (modelMount && modelMount.mountPath !== "/models") p.push("models are mounted at /models, as in the image");
    const writable = (container.volumeMounts ?? []).some((m) => m.mountPath === "/tmp" && volume(m)?.emptyDir);
    if (!writable) p.push("a read-only root needs an emptyDir at /tmp");
    return p;
  },
  "rolling updates add a ready pod before removing one, and the autoscaler owns the count"({ deploy, byKind }) {
    const p = [];
    const ru = deploy.spec.strategy?.rollingUpdate ?? {};
    if (deploy.spec.strategy?.type !== "RollingUpdate" || ru.maxUnavailable !== 0 || !(ru.maxSurge >= 1))
      p.push("strategy must be RollingUpdate with maxUnavailable 0 and maxSurge >= 1");
    if (deploy.spec.replicas !== undefined) p.push("replicas must be left to the HorizontalPodAutoscaler");
    const hpa = (byKind.HorizontalPodAutoscaler ?? [])[0];
    if (!hpa || hpa.spec.scaleTargetRef.kind !== "Deployment" || hpa.spec.scaleTargetRef.name !== deploy.metadata.name)
      p.push("a HorizontalPodAutoscaler must target the Deployment");
    return p;
  },
  "the Service, PodDisruptionBudget and ServiceMonitor select the server's pods"({ deploy, container, byKind }) {
    const p = [];
    const labels = deploy.spec.template.metadata.labels;
    const svc = (byKind.Service ?? [])[0];
    if (!svc || !matches(svc.spec.selector, labels)) p.push("the Service selector does not match the pod labels");
    const names = (container.ports ?? []).map((x) => x.name);
    if (svc && !svc.spec.ports.every((x) => names.includes(x.targetPort))) p.push("Service targetPort must name a container port");
    const pdb = (byKind.PodDisruptionBudget ?? [])[0];
    if (!pdb || !matches(pdb.spec.selector?.matchLabels, labels)) p.push("the PodDisruptionBudget does not select the pods");
    const hpa = (byKind.HorizontalPodAutoscaler ?? [])[0];
    if (pdb && hpa && pdb.spec.maxUnavailable !== undefined && hpa.spec.minReplicas <= pdb.spec.maxUnavailable)
      p.push("minReplicas must exceed the PodDisruptionBudget's maxUnavailable, or a drain can take every pod");
    const sm = (byKind.ServiceMonitor ?? [])[0];
    if (!sm || !svc || !matches(sm.spec.selector?.matchLabels, svc.metadata.labels)) p.push("the ServiceMonitor does not select the Service");
    const ep = sm?.spec.endpoints?.[0];
    if (!ep || ep.path !== "/metrics" || !(svc?.spec.ports ?? []).some((x) => x.name === ep.port))
      p.push("the ServiceMonitor must scrape /metrics on a named Service port");
    return p;
  },
  "the PrometheusRule carries exactly the promtool-tested alert rules"({ byKind, alertRules }) {
    const rule = (byKind.PrometheusRule ?? [])[0];
    if (!rule) return ["no PrometheusRule among the manifests"];
    const same = JSON.stringify(canonical(rule.spec.groups)) === JSON.stringify(canonical(alertRules.groups));
    return same ? [] : ["PrometheusRule spec.groups differ from deploy/prometheus/strata-alerts.yaml: copy the file's groups"];
  },
  "the autoscaler's metrics are served by the prometheus-adapter rules"({ byKind, adapter, metrics }) {
    const p = [];
    const served = new Set(
      (adapter.rules ?? []).map((r) => r.name?.as ?? /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(r.seriesQuery ?? "")?.[1]),
    );
    const hpa = (byKind.HorizontalPodAutoscaler ?? [])[0];
    for (const m of hpa?.spec.metrics ?? []) {
      const name = m.pods?.metric?.name ?? m.object?.metric?.name;
      if (!name) continue;
      if (!served.has(name)) p.push(`HPA metric ${name} is not exposed by any prometheus-adapter rule`);
    }
    for (const r of adapter.rules ?? []) {
      const series = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(r.seriesQuery ?? "")?.[1];
      if (!metrics.has(series)) p.push(`adapter rule reads ${series}, which strata does not serve (tests/deploy/metrics.txt)`);
      if (!r.resources?.overrides?.pod || !r.resources?.overrides?.namespace) p.push("adapter rule must map namespace and pod labels");
      for (const t of ["<<.Series>>", "<<.LabelMatchers>>", "<<.GroupBy>>"])
        if (!(r.metricsQuery ?? "").includes(t)) p.push(`adapter metricsQuery must use ${t}`);
    }
    return p;
  },
};

function context(docs, adapter, dockerUid, metrics, alertRules) {
  const byKind = {};
  for (const d of docs) (byKind[d.kind] ??= []).push(d);
  const deploy = (byKind.Deployment ?? [])[0];
  if (!deploy) throw new Error("no Deployment among the manifests");
  const pod = deploy.spec.template.spec;
  const container = pod.containers.find((c) => c.name === "strata") ?? pod.containers[0];
  return { byKind, deploy, pod, container, adapter, dockerUid, metrics, alertRules };
}

function runChecks(ctx) {
  const failures = {};
  for (const [name, check] of Object.entries(checks)) {
    const problems = check(ctx);
    if (problems.length) failures[name] = problems;
  }
  return failures;
}

// One mutation per invariant: the manifests as a careless edit would leave them, and the check that must object.
const mutations = [
  ["readiness on /health", "probes use", (c) => (c.container.readinessProbe.httpGet.path = "/health")],
  ["startup window of one minute", "probes use", (c) => (c.container.startupProbe.failureThreshold = 6)],
  ["server bound to loopback", "listens on all", (c) => (c.container.args = c.container.args.map((a) => a.replace("--host=0.0.0.0", "--host=127.0.0.1")))],
  ["port flag differs from containerPort", "listens on all", (c) => (c.container.ports[0].containerPort = 9000)],
  ["grace shorter than the drain", "terminationGracePeriodSeconds", (c) => (c.pod.terminationGracePeriodSeconds = 30)],
  ["no preStop", "terminationGracePeriodSeconds", (c) => delete c.container.lifecycle],
  ["GPU limit differs from request", "GPUs and memory", (c) => (c.container.resources.limits["nvidia.com/gpu"] = "2")],
  ["memory limit missing", "GPUs and memory", (c) => delete c.container.resources.limits.memory],
  ["uid differs from the image's", "non-root user", (c) => (c.pod.securityContext.runAsUser = 1000)],
  ["writable root filesystem", "non-root user", (c) => (c.container.securityContext.readOnlyRootFilesystem = false)],
  ["config from a missing ConfigMap", "config, API keys", (c) => (c.pod.volumes.find((v) => v.configMap).configMap.name = "gone")],
  ["writable model mount", "config, API keys", (c) => (c.container.volumeMounts.find((m) => m.mountPath === "/models").readOnly = false)],
  ["fixed replica count", "rolling updates", (c) => (c.deploy.spec.replicas = 3)],
  ["rollout may drop a pod first", "rolling updates", (c) => (c.deploy.spec.strategy.rollingUpdate.maxUnavailable = 1)],
  ["Service selects other pods", "select the server's pods", (c) => (c.byKind.Service[0].spec.selector = { app: "other" })],
  ["single replica under a PDB of one", "select the server's pods", (c) => (c.byKind.HorizontalPodAutoscaler[0].spec.minReplicas = 1)],
  ["ServiceMonitor scrapes a port the Service lacks", "select the server's pods", (c) => (c.byKind.ServiceMonitor[0].spec.endpoints[0].port = "metrics")],
  ["HPA on a metric the adapter does not serve", "autoscaler's metrics", (c) => (c.byKind.HorizontalPodAutoscaler[0].spec.metrics[0].pods.metric.name = "strata_queue_len")],
  ["PrometheusRule with a threshold the tests never saw", "PrometheusRule", (c) => (c.byKind.PrometheusRule[0].spec.groups[0].rules[0].for = "1m")],
  ["adapter reads an unknown series", "autoscaler's metrics", (c) => (c.adapter.rules[0].seriesQuery = 'strata_queue{pod!=""}')],
];

function main(argv) {
  const [rendered, adapterFile, dockerfile, alertsFile] = argv.filter((a) => !a.startsWith("--"));
  if (!alertsFile) {
    console.error("usage: node check_k8s_policy.mjs RENDERED.yaml ADAPTER_CONFIG.yaml DOCKERFILE ALERT_RULES.yaml [--self-test]");
    return 2;
  }
  const docs = YAML.parseAllDocuments(readFileSync(rendered, "utf8")).map((d) => d.toJS()).filter(Boolean);
  const adapter = YAML.parse(readFileSync(adapterFile, "utf8"));
  const users = [...readFileSync(dockerfile, "utf8").matchAll(/^USER\s+(\d+)/gm)].map((m) => Number(m[1]));
  if (users.length !== 1) {
    console.log(`the Dockerfile must set exactly one numeric USER (found ${users.length})`);
    return 1;
  }
  const metricsFile = new URL("./metrics.txt", import.meta.url);
  const metrics = new Set(
    readFileSync(metricsFile, "utf8").split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.split(" ")[0]),
  );
  const alertRules = YAML.parse(readFileSync(alertsFile, "utf8"));
  const fresh = () => context(structuredClone(docs), structuredClone(adapter), users[0], metrics, alertRules);

  let failed = 0;
  const failures = runChecks(fresh());
  for (const name of Object.keys(checks)) {
    if (failures[name]) {
      failed++;
      console.log(`FAIL ${name}:\n  - ${failures[name].join("\n  - ")}`);
    } else console.log(`ok   ${name}`);
  }
  if (argv.includes("--self-test")) {
    for (const [what, checkPrefix, mutate] of mutations) {
      const ctx = fresh();
      mutate(ctx);
      const caught = Object.keys(runChecks(ctx)).filter((n) => n.includes(checkPrefix));
      if (caught.length) console.log(`ok   mutation caught: ${what}`);
      else {
        failed++;
        console.log(`FAIL mutation not caught by "${checkPrefix}...": ${what}`);
      }
    }
  }
  const total = Object.keys(checks).length + (argv.includes("--self-test") ? mutations.length : 0);
  console.log(`${total - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
