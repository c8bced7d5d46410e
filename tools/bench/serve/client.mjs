// One streaming request over the OpenAI API and its timeline. Times are taken with performance.now() at the
// moment the bytes that complete an event are read, relative to just before the request is sent, so TTFT
// includes connection set-up and queueing in the server, as a real client sees it.
import http from 'node:http';
import { SseParser } from './sse.mjs';

// The request body for one prompt; ignore_eos and seed are only sent when asked for because they are not
// part of the OpenAI schema and a strict server may reject them.
export function requestBody({ endpoint, model, prompt, maxTokens, temperature, seed, ignoreEos }) {
  const body = { model, max_tokens: maxTokens, temperature, stream: true, stream_options: { include_usage: true } };
  if (endpoint === 'chat') body.messages = [{ role: 'user', content: prompt }];
  else body.prompt = prompt;
  if (seed !== null && seed !== undefined) body.seed = seed;
  if (ignoreEos) body.ignore_eos = true;
  return body;
}

export const endpointPath = (endpoint) => (endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions');

function errorMessageOf(obj) {
  const e = obj && obj.error;
  if (e === undefined || e === null) return null;
  if (typeof e === 'string') return e;
  if (typeof e.message === 'string') return e.message;
  return JSON.stringify(e);
}

// Text a chunk carries: completions put it in choices[0].text, chat in choices[0].delta.content (or
// reasoning_content for thinking models). A role-only or empty delta is not a content chunk.
// What a chunk carries. `token`: it stands for a generated token, as vLLM's benchmark counts them: a
// completion chunk with a text field (which may be "": the server sends one chunk a token, and a token
// whose text is not complete yet, e.g. part of a UTF-8 character, comes as "") other than a bare finish
// chunk; a chat chunk with content (chat deltas carry text only).
function chunkText(obj) {
  const choice = Array.isArray(obj.choices) ? obj.choices[0] : undefined;
  if (!choice) return { text: '', finish: null, token: false };
  let text = '';
  let token = false;
  const finish = choice.finish_reason ?? null;
  if (typeof choice.text === 'string') {
    text = choice.text;
    token = text.length > 0 || finish === null;
  } else if (choice.delta) {
    if (typeof choice.delta.content === 'string') text += choice.delta.content;
    if (typeof choice.delta.reasoning_content === 'string') text += choice.delta.reasoning_content;
    token = text.length > 0;
  }
  return { text, finish, token };
}

// Requests go through node:http with a keep-alive agent, not fetch(): undici's web streams added 1.3-2 ms
// to every TTFT at one client and ~4 ms at 64 (measured against the server's own ttft_s), which is the
// client's cost, not the server's. The agent keeps one connection a client, as a long-lived SDK client does.
const agents = new Map();
function agentFor(protocol) {
  if (!agents.has(protocol)) agents.set(protocol, new http.Agent({ keepAlive: true, maxSockets: Infinity }));
  return agents.get(protocol);
}

// Sends one request; resolves with the response once its headers are in.
function post(url, headers, payload, signal) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    if (u.protocol !== 'http:') {
      reject(new Error(`only http:// URLs are supported, not ${u.protocol}`));
      return;
    }
    const req = http.request(
      u,
      {
        method: 'POST',
        agent: agentFor(u.protocol),
        headers: { ...headers, 'content-length': Buffer.byteLength(payload) },
        signal,
      },
      resolve,
    );
    req.setNoDelay(true);
    req.on('error', reject);
    req.end(payload);
  });
}

async function readAll(res) {
  const parts = [];
  for await (const c of res) parts.push(c);
  return Buffer.concat(parts).toString('utf-8');
}

// Never throws: every failure becomes a record with ok=false and a message saying what went wrong.
export async function streamRequest({ url, body, headers = {}, signal, index }) {
  const rec = {
    index,
    ok: false,
    status: null,
    error: null,
    chunkTimes: [],
    firstTextMs: null,
    e2eMs: null,
    text: '',
    outputTokens: 0,
    outputTokensSource: null,
    promptTokens: null,
    finishReason: null,
    responseId: null,
    sentUnixMs: null,
    reusedConnection: null,
  };
  const t0 = performance.now();
  // Wall-clock send time and the response id: what joins this record to the server's log lines about it.
  rec.sentUnixMs = performance.timeOrigin + t0;
  let usage = null;
  let done = false;
  let res = null;
  try {
    res = await post(
      url,
      { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      JSON.stringify(body),
      signal,
    );
    rec.status = res.statusCode;
    rec.reusedConnection = res.req?.reusedSocket === true;
    if (res.statusCode !== 200) {
      const raw = await readAll(res);
      let msg = raw.slice(0, 500);
      try {
        msg = errorMessageOf(JSON.parse(raw)) ?? msg;
      } catch {
        // not JSON: keep the raw text
      }
      rec.error = `HTTP ${res.statusCode}: ${msg}`;
      return rec;
    }
    const parser = new SseParser();
    const it = res[Symbol.asyncIterator]();
    outer: for (;;) {
      const { value, done: eof } = await it.next();
      const t = performance.now() - t0;
      const events = eof ? parser.end() : parser.push(value);
      for (const ev of events) {
        if (ev.data === '[DONE]') {
          done = true;
          rec.e2eMs = t;
          break outer;
        }
        let obj;
        try {
          obj = JSON.parse(ev.data);
        } catch {
          rec.error = `malformed JSON in stream event: ${ev.data.slice(0, 200)}`;
          res.destroy();
          return rec;
        }
        const err = errorMessageOf(obj);
        if (ev.event === 'error' || err !== null) {
          rec.error = `error event in stream: ${err ?? ev.data.slice(0, 200)}`;
          res.destroy();
          return rec;
        }
        if (rec.responseId === null && typeof obj.id === 'string') rec.responseId = obj.id;
        if (obj.usage) usage = obj.usage;
        const { text, finish, token } = chunkText(obj);
        if (token) rec.chunkTimes.push(t);
        if (text.length > 0) {
          if (rec.firstTextMs === null) rec.firstTextMs = t;
          rec.text += text;
        }
        if (finish) rec.finishReason = finish;
      }
      if (eof) break;
    }
    if (!done) {
      rec.error = 'the stream ended before "data: [DONE]"';
      return rec;
    }
    // Read on to the end of the response (the chunked terminator follows [DONE]) so the connection goes
    // back to the agent: returning from the iterator instead would destroy the socket, and every request
    // would open a new connection (that cost ~1.2 ms of each TTFT on the GPU machine).
    for (;;) {
      const { done: end } = await it.next();
      if (end) break;
    }
  } catch (e) {
    if (res) res.destroy();
    rec.error = signal && signal.aborted ? 'aborted: the duration limit was reached' : `request failed: ${e.cause?.message ?? e.message}`;
    return rec;
  }
  if (usage && Number.isInteger(usage.completion_tokens)) {
    rec.outputTokens = usage.completion_tokens;
    rec.outputTokensSource = 'usage';
  } else {
    rec.outputTokens = rec.chunkTimes.length;
    rec.outputTokensSource = 'chunks';
  }
  if (usage && Number.isInteger(usage.prompt_tokens)) rec.promptTokens = usage.prompt_tokens;
  rec.ok = true;
  return rec;
}
