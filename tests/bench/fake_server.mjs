#!/usr/bin/env node
// A stand-in OpenAI streaming server with exactly known timing and output, so bench_serve's measurements
// and its failure handling can be checked without a model. It takes the real binary's command shape
// (`serve --port 0 --model DIR`) and prints the same `listening on http://HOST:PORT` line.
//
// Output of a request is a pure function of its prompt (a hash picks the words), so solo and loaded runs
// agree — unless --batch-variant makes the words depend on how many requests are in flight, which is the
// bug --check-solo exists to catch. Timing: the first content chunk leaves --ttft-ms after the request
// arrives, each next one --itl-ms later. A chat stream first sends a role-only chunk at once, which must not
// count as the first token. --held-first makes a completion's first token chunk carry text "" (a token
// whose text is not complete yet) and its word come with the second.
import http from 'node:http';

const opts = { port: 0, ttftMs: 50, itlMs: 10, failEvery: 0, errorEventEvery: 0, batchVariant: false, tokensPerWord: 2, heldFirst: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const val = () => argv[++i];
  if (a === 'serve') continue;
  else if (a === '--port') opts.port = Number(val());
  else if (a === '--host' || a === '--model') val();
  else if (a === '--ttft-ms') opts.ttftMs = Number(val());
  else if (a === '--itl-ms') opts.itlMs = Number(val());
  else if (a === '--fail-every') opts.failEvery = Number(val());
  else if (a === '--error-event-every') opts.errorEventEvery = Number(val());
  else if (a === '--batch-variant') opts.batchVariant = true;
  else if (a === '--held-first') opts.heldFirst = true;
  else {
    console.error(`fake_server: unknown argument '${a}'`);
    process.exit(2);
  }
}

const countTokens = (text) => text.split(/\s+/).filter(Boolean).length * opts.tokensPerWord;
function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}

let arrivals = 0;
let inFlight = 0;

function readJson(req) {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => {
      try {
        resolve(JSON.parse(s));
      } catch {
        resolve(null);
      }
    });
  });
}

function sendJson(res, status, obj) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}

async function generate(req, res, chat) {
  const body = await readJson(req);
  const n = ++arrivals;
  if (!body || typeof body.max_tokens !== 'number') return sendJson(res, 400, { error: { message: "'max_tokens' is required" } });
  if (opts.failEvery > 0 && n % opts.failEvery === 0)
    return sendJson(res, 500, { error: { message: `injected failure of request #${n}`, type: 'server_error' } });
  const prompt = chat ? body.messages[0].content : body.prompt;
  const h = hash(prompt);
  const count = body.ignore_eos ? body.max_tokens : Math.min(body.max_tokens, 2 + (h % body.max_tokens));
  const injectError = opts.errorEventEvery > 0 && n % opts.errorEventEvery === 0;
  inFlight++;
  let closed = false;
  res.on('close', () => {
    if (!closed) inFlight--;
    closed = true;
  });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const id = `cmpl-${n}`;
  const chunk = (payload) => res.write(`data: ${JSON.stringify({ id, object: chat ? 'chat.completion.chunk' : 'text_completion', ...payload })}\n\n`);
  if (chat) chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  let j = 0;
  const step = () => {
    if (closed) return;
    if (injectError && j === 1) {
      res.write(`data: ${JSON.stringify({ error: { message: 'injected engine fault', type: 'server_error', code: 500 } })}\n\n`);
      res.end();
      return;
    }
    const wobble = opts.batchVariant && inFlight > 1 ? 1 : 0;
    const wordOf = (k) => ` w${(h + k * 31 + wobble) % 97}`;
    const held = opts.heldFirst && !chat && count > 1;
    const word = held && j === 0 ? '' : held && j === 1 ? wordOf(0) + wordOf(1) : wordOf(j);
    const last = j === count - 1;
    const finish = last ? (count === body.max_tokens ? 'length' : 'stop') : null;
    chunk({ choices: [chat ? { index: 0, delta: { content: word }, finish_reason: finish } : { index: 0, text: word, finish_reason: finish }] });
    j++;
    if (!last) return setTimeout(step, opts.itlMs);
    if (body.stream_options && body.stream_options.include_usage)
      chunk({ choices: [], usage: { prompt_tokens: countTokens(prompt), completion_tokens: count, total_tokens: countTokens(prompt) + count } });
    res.write('data: [DONE]\n\n');
    res.end();
  };
  setTimeout(step, opts.ttftMs);
}

const server = http.createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/v1/models') return sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model' }] });
  if (req.method === 'POST' && req.url === '/tokenize') {
    const body = await readJson(req);
    if (!body || typeof body.prompt !== 'string') return sendJson(res, 400, { error: { message: "'prompt' is required" } });
    return sendJson(res, 200, { count: countTokens(body.prompt) });
  }
  if (req.method === 'POST' && req.url === '/v1/completions') return generate(req, res, false);
  if (req.method === 'POST' && req.url === '/v1/chat/completions') return generate(req, res, true);
  sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
});
server.listen(opts.port, '127.0.0.1', () => {
  console.error(`[info] listening on http://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
