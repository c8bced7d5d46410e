// Command-line options of bench_serve. Every value is checked here so a bad flag fails before any request
// is sent, with a message naming the flag and what it accepts.

export class UsageError extends Error {}

export const USAGE = `usage: node tools/bench/bench_serve.mjs [options]

Streaming load against an OpenAI-compatible server on this machine (loopback addresses only).

  --url URL              server base URL (default http://127.0.0.1:8000)
  --endpoint KIND        completions | chat (default completions)
  --model NAME           model id (default: the first one /v1/models lists)
  --concurrency LIST     clients in flight, one value or a sweep like 1,8,32 (default 8)
  --requests N           requests per concurrency level (default 32); every level gets prompts of its own
                         (except with --check-solo), so no level finds another's in the prefix cache
  --prompt-tokens N      prompt text length in tokens, calibrated with /tokenize when available; chat adds
                         the template's own tokens (default 128)
  --max-tokens N         max_tokens of every request (default 128)
  --temperature T        sampling temperature (default 0 = greedy)
  --seed S               per-request seed S+i for request i; also seeds the prompt text (default: none)
  --ignore-eos           ask the server to generate all max_tokens
  --duration-limit SEC   wall-time limit of each phase; open requests are aborted at it (default 600)
  --ramp-up SEC          stagger the clients' first requests evenly over SEC seconds; those first requests
                         are left out of the statistics, which then describe the steady load that follows
                         (needs --requests above the largest --concurrency; default 0: all start at once)
  --client-threads N     spread the clients over N threads, each with its own event loop, or 'auto': one
                         thread per 16 clients, up to 8 (default auto)
  --api-key KEY          sent as Authorization: Bearer KEY
  --no-calibrate         do not call /tokenize; estimate prompt lengths
  --check-solo           run every prompt alone first, then all at each concurrency; exit 1 if any output
                         differs from its solo run (needs --temperature 0 or --seed)
  --json FILE            write every number (and per-request timings) as JSON
  --png FILE             plot TTFT and ITL p50/p99 against concurrency
  --quiet                print only the summary table

Exit status: 0 all requests succeeded (and matched, with --check-solo); 1 a request failed, was not sent
before the duration limit, or differed from its solo run; 2 bad options or unreachable server.`;

function intIn(flag, raw, min, max) {
  if (!/^-?\d+$/.test(raw)) throw new UsageError(`${flag} must be an integer, got '${raw}'`);
  const v = Number(raw);
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new UsageError(`${flag} must be between ${min} and ${max}, got ${raw}`);
  return v;
}

function numberIn(flag, raw, min, max) {
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || v < min || v > max)
    throw new UsageError(`${flag} must be a number between ${min} and ${max}, got '${raw}'`);
  return v;
}

const VALUE_FLAGS = new Set([
  '--url', '--endpoint', '--model', '--concurrency', '--requests', '--prompt-tokens', '--max-tokens',
  '--temperature', '--seed', '--duration-limit', '--ramp-up', '--client-threads', '--api-key', '--json', '--png',
]);
const BOOL_FLAGS = new Set(['--ignore-eos', '--check-solo', '--no-calibrate', '--quiet', '--help']);

export function parseArgs(argv) {
  const raw = new Map();
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let value = null;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (BOOL_FLAGS.has(a)) {
      if (value !== null) throw new UsageError(`${a} takes no value`);
      raw.set(a, true);
    } else if (VALUE_FLAGS.has(a)) {
      if (value === null) {
        if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
        value = argv[++i];
      }
      raw.set(a, value);
    } else {
      throw new UsageError(`unknown option '${a}' (see --help)`);
    }
  }
  const get = (k, d) => (raw.has(k) ? raw.get(k) : d);
  const o = {
    help: raw.has('--help'),
    url: get('--url', 'http://127.0.0.1:8000'),
    endpoint: get('--endpoint', 'completions'),
    model: get('--model', null),
    requests: intIn('--requests', get('--requests', '32'), 1, 1000000),
    promptTokens: intIn('--prompt-tokens', get('--prompt-tokens', '128'), 1, 10000000),
    maxTokens: intIn('--max-tokens', get('--max-tokens', '128'), 1, 10000000),
    temperature: numberIn('--temperature', get('--temperature', '0'), 0, 2),
    seed: raw.has('--seed') ? intIn('--seed', raw.get('--seed'), 0, 2 ** 52) : null,
    ignoreEos: raw.has('--ignore-eos'),
    durationLimitS: numberIn('--duration-limit', get('--duration-limit', '600'), 0.001, 7 * 24 * 3600),
    rampUpS: numberIn('--ramp-up', get('--ramp-up', '0'), 0, 3600),
    clientThreads: get('--client-threads', 'auto') === 'auto' ? 'auto' : intIn('--client-threads', get('--client-threads'), 1, 64),
    apiKey: get('--api-key', null),
    calibrate: !raw.has('--no-calibrate'),
    checkSolo: raw.has('--check-solo'),
    json: get('--json', null),
    png: get('--png', null),
    quiet: raw.has('--quiet'),
  };
  if (o.endpoint !== 'completions' && o.endpoint !== 'chat')
    throw new UsageError(`--endpoint must be 'completions' or 'chat', got '${o.endpoint}'`);
  const levels = String(get('--concurrency', '8')).split(',');
  o.concurrency = levels.map((s) => intIn('--concurrency', s.trim(), 1, 100000));
  if (new Set(o.concurrency).size !== o.concurrency.length)
    throw new UsageError(`--concurrency lists a level twice: '${get('--concurrency')}'`);
  if (o.rampUpS > 0 && o.requests <= Math.max(...o.concurrency))
    throw new UsageError(`--ramp-up leaves each client's first request out, so --requests (${o.requests}) must be above the largest --concurrency (${Math.max(...o.concurrency)})`);
  if (o.checkSolo && o.temperature > 0 && o.seed === null)
    throw new UsageError('--check-solo compares outputs, so it needs --temperature 0 or a --seed');
  o.baseUrl = loopbackBaseUrl(o.url);
  return o;
}

// Load is only ever aimed at this machine: a benchmark pointed at someone else's server is an attack.
export function loopbackBaseUrl(text) {
  let u;
  try {
    u = new URL(text);
  } catch {
    throw new UsageError(`--url is not a URL: '${text}'`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`--url must be http or https, got '${u.protocol}'`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const v4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  if (!(v4 || host === 'localhost' || host === '::1'))
    throw new UsageError(`--url must point at a loopback address (127.0.0.0/8, ::1, localhost), got '${u.hostname}'`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}`;
}
