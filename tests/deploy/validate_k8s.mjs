// Validates Kubernetes manifests offline against the Kubernetes OpenAPI schemas (kubernetes-models) and the
// prometheus-operator CRD schemas (@kubernetes-models/prometheus-operator).
//
// usage: node validate_k8s.mjs FILE... ("-" reads stdin); each file may hold several YAML documents.
// Exit 0 when every document is valid, 1 when any is not (each problem printed as FILE#DOC KIND/NAME: ...),
// 2 on a usage error.
//
// The schemas that ship with kubernetes-models check types, enums and required fields but leave unknown
// fields alone, as the API server's non-strict decoding does; a misspelt field (`readinessProbes:`) would then
// pass silently and simply have no effect in the cluster. So the validator is also made strict: it watches
// which fields the compiled schema reads, and any field the schema never looked at is reported as unknown.
// Map-like fields (labels, data, resources) are read by enumeration and count as known.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import YAML from "yaml";

const require = createRequire(import.meta.url);
const modelPackages = ["kubernetes-models", "@kubernetes-models/prometheus-operator"].map((name) =>
  path.dirname(require.resolve(`${name}/package.json`)),
);

// The model class file for apiVersion/kind names the compiled schema it validates with.
async function schemaFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  for (const root of modelPackages) {
    const modelFile = group ? path.join(root, group, version, `${kind}.mjs`) : path.join(root, version, `${kind}.mjs`);
    let text;
    try {
      text = readFileSync(modelFile, "utf8");
    } catch {
      continue;
    }
    const m = /from\s*"(\.\.\/[^"]*_schemas\/[A-Za-z0-9]+\.mjs)"/.exec(text);
    if (!m) throw new Error(`cannot find the schema import in ${modelFile}`);
    const mod = await import(pathToFileURL(path.resolve(path.dirname(modelFile), m[1])).href);
    return mod.validate;
  }
  return null;
}

// Wraps `root` so that every property read by the validator is recorded per object.
function watchReads(root) {
  const reads = new Map(); // original object -> Set of keys read, or "*" when enumerated
  const proxies = new WeakMap();
  const wrap = (obj) => {
    if (obj === null || typeof obj !== "object") return obj;
    if (proxies.has(obj)) return proxies.get(obj);
    if (!reads.has(obj)) reads.set(obj, new Set());
    const seen = reads.get(obj);
    const proxy = new Proxy(obj, {
      get(target, key, receiver) {
        if (typeof key === "string") seen.add(key);
        return wrap(Reflect.get(target, key, receiver));
      },
      has(target, key) {
        if (typeof key === "string") seen.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        seen.add("*");
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(obj, proxy);
    return proxy;
  };
  return { proxy: wrap(root), reads };
}

function unknownFields(root, reads) {
  const found = [];
  const walk = (obj, where) => {
    if (obj === null || typeof obj !== "object") return;
    const seen = reads.get(obj);
    if (Array.isArray(obj)) {
      obj.forEach((v, i) => walk(v, `${where}/${i}`));
      return;
    }
    for (const key of Object.keys(obj)) {
      if (seen && !seen.has("*") && !seen.has(key)) found.push(`${where}/${key}`);
      else walk(obj[key], `${where}/${key}`);
    }
  };
  walk(root, "");
  return found;
}

function describe(err) {
  const params = Object.entries(err.params || {})
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(" ");
  return `${err.instancePath || "/"}: ${err.keyword} ${params}`.trim();
}

export async function validateDocument(doc) {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return ["document is not a mapping"];
  if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") return ["apiVersion and kind are required"];
  const validate = await schemaFor(doc.apiVersion, doc.kind);
  if (!validate) return [`no schema for ${doc.apiVersion} ${doc.kind} (unknown kind or API version)`];
  const { proxy, reads } = watchReads(doc);
  const problems = [];
  if (!validate(proxy)) {
    // anyOf/oneOf branches report every branch they tried; one line per distinct place and rule is enough.
    problems.push(...new Set(validate.errors.map(describe)));
  }
  problems.push(...unknownFields(doc, reads).map((p) => `${p}: unknown field`));
  if (!doc.metadata || typeof doc.metadata.name !== "string" || doc.metadata.name === "") {
    problems.push("/metadata/name: required");
  }
  return problems;
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node validate_k8s.mjs FILE... (- for stdin)");
    return 2;
  }
  let bad = 0;
  let count = 0;
  for (const file of files) {
    const text = readFileSync(file === "-" ? 0 : file, "utf8");
    const docs = YAML.parseAllDocuments(text);
    for (const [i, d] of docs.entries()) {
      const where = `${file}#${i + 1}`;
      if (d.errors.length) {
        console.log(`${where}: YAML error: ${d.errors[0].message}`);
        bad++;
        continue;
      }
      const doc = d.toJS();
      if (doc === null) continue; // an empty document between separators
      count++;
      const name = `${doc.kind ?? "?"}/${doc.metadata?.name ?? "?"}`;
      const problems = await validateDocument(doc);
      for (const p of problems) console.log(`${where} ${name}: ${p}`);
      if (problems.length) bad++;
      else console.log(`${where} ${name}: valid`);
    }
  }
  if (count === 0) {
    console.log("no manifests found");
    return 1;
  }
  console.log(`${count - bad} valid, ${bad} invalid`);
  return bad ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
