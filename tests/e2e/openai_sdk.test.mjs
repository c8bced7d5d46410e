// The official `openai` npm SDK against the real `strata serve` on a fixture model: every request parameter,
// streaming and not, n > 1, logprobs, seeds, stops, usage, error statuses, 16 concurrent streams, and
// aborted streams freeing their slots. The fixture's weights are random, so tests compare the server with
// itself (stream vs non-stream, seed vs seed) rather than with fixed text.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startServer, metric, waitFor, repoRoot } from './lib/server.mjs';

const require = createRequire(path.join(repoRoot, 'tests', 'node', 'package.json'));
const OpenAI = require('openai');

const MODEL = 'tiny';
const ALIAS = 'tiny-alias';
let srv;
let client;

before(async () => {
  srv = await startServer(['--served-model-name', MODEL, '--served-model-name', ALIAS, '--max-slots', '4', '--max-n', '4']);
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
});
after(async () => {
  const r = await srv.stop();
  assert.equal(r.code, 0, 'strata exits 0 on SIGTERM');
});

const messages = [{ role: 'user', content: 'Say something about rivers.' }];

async function collect(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}
function streamText(chunks, index = 0) {
  return chunks.flatMap((c) => c.choices.filter((ch) => ch.index === index)).map((ch) => ch.delta?.content ?? ch.text ?? '').join('');
}

describe('models', () => {
  test('lists the canonical id and the aliases with the context length', async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    assert.deepEqual(ids, [MODEL, ALIAS]);
    assert.ok(list.data[0].max_model_len > 0);
    assert.equal((await client.models.retrieve(ALIAS)).id, ALIAS);
  });
});

describe('chat completions', () => {
  test('non-streaming: assistant message, finish_reason and usage', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.prompt_tokens > 0);
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  test('streaming gives the same greedy text as non-streaming, role first, usage chunk and stable id', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0 });
    const chunks = await collect(await client.chat.completions.create({
      model: MODEL, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true } }));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    for (const c of chunks) {
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.id, chunks[0].id);
      assert.equal(c.created, chunks[0].created);
      assert.equal(c.model, MODEL);
    }
    assert.equal(streamText(chunks), whole.choices[0].message.content);
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, whole.usage);
    const finish = chunks.flatMap((c) => c.choices).map((c) => c.finish_reason).filter(Boolean);
    assert.deepEqual(finish, [whole.choices[0].finish_reason]);
  });

  test('the same seed gives the same sampled output; n choices use seed+i', async () => {
    const req = { model: MODEL, messages, max_tokens: 10, temperature: 1.0, seed: 1234 };
    const a = await client.chat.completions.create(req);
    const b = await client.chat.completions.create(req);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    const n = await client.chat.completions.create({ ...req, n: 3 });
    assert.equal(n.choices.length, 3);
    assert.deepEqual(n.choices.map((c) => c.index), [0, 1, 2]);
    assert.equal(n.choices[0].message.content, a.choices[0].message.content, 'choice 0 uses the seed itself');
    const next = await client.chat.completions.create({ ...req, seed: 1235 });
    assert.equal(n.choices[1].message.content, next.choices[0].message.content, 'choice 1 uses seed + 1');
  });

  test('n > 1 streams every choice with its own index', async () => {
    const chunks = await collect(await client.chat.completions.create({
      model: MODEL, messages, max_tokens: 6, temperature: 1, seed: 5, n: 2, stream: true }));
    const idx = new Set(chunks.flatMap((c) => c.choices.map((ch) => ch.index)));
    assert.deepEqual([...idx].sort(), [0, 1]);
    const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 1, seed: 5, n: 2 });
    assert.equal(streamText(chunks, 0), whole.choices[0].message.content);
    assert.equal(streamText(chunks, 1), whole.choices[1].message.content);
  });

  test('max_tokens bounds the output and ends with finish_reason length', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_completion_tokens: 3, temperature: 0, ignore_eos: true });
    assert.equal(r.usage.completion_tokens, 3);
    assert.equal(r.choices[0].finish_reason, 'length');
  });

  test('a stop string ends the output before it and is not emitted', async () => {
    const base = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0, ignore_eos: true });
    const text = base.choices[0].message.content;
    // Pick a stop string from the middle of the greedy text; greedy output up to it is unchanged.
    const cut = Math.floor(text.length / 2);
    const stop = text.slice(cut, cut + 2);
    assert.ok(stop.length > 0, `greedy text long enough: ${JSON.stringify(text)}`);
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0, ignore_eos: true, stop: [stop, 'ZZZZ'] });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].message.content, text.slice(0, text.indexOf(stop)));
    const s = await collect(await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0, ignore_eos: true, stop, stream: true }));
    assert.equal(streamText(s), r.choices[0].message.content);
  });

  test('logprobs with top_logprobs, streamed and not', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0].logprobs.content;
    assert.equal(lp.length, r.usage.completion_tokens);
    for (const e of lp) {
      assert.ok(e.logprob <= 0);
      assert.equal(e.top_logprobs.length, 3);
      assert.ok(Array.isArray(e.bytes));
      // Greedy: the picked token is the most likely one.
      assert.ok(e.logprob >= e.top_logprobs[0].logprob - 1e-4);
    }
    const s = await collect(await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2, stream: true }));
    const streamed = s.flatMap((c) => c.choices).flatMap((c) => c.logprobs?.content ?? []);
    assert.equal(streamed.length, lp.length);
    assert.deepEqual(streamed.map((e) => e.token), lp.map((e) => e.token));
  });

  test('every sampling and vLLM extra parameter is accepted together', async () => {
    const r = await client.chat.completions.create({
      model: ALIAS, messages, max_tokens: 6, temperature: 0.8, top_p: 0.9, seed: 3, stop: ['\n\n\n'],
      presence_penalty: 0.5, frequency_penalty: 0.3, logit_bias: { 5: 2, 7: -100 }, user: 'e2e',
      top_k: 20, min_p: 0.05, repetition_penalty: 1.1, min_tokens: 2, ignore_eos: false, stop_token_ids: [1],
      skip_special_tokens: true, chat_template_kwargs: { enable_thinking: false }, add_generation_prompt: true,
      response_format: { type: 'text' }, parallel_tool_calls: false, some_future_field: { x: 1 },
    });
    assert.equal(r.model, ALIAS);
    assert.ok(r.usage.completion_tokens >= 2, 'min_tokens holds EOS back');
  });

  test('logit_bias of -100 keeps a token out of greedy output', async () => {
    const base = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1, temperature: 0, logprobs: true, ignore_eos: true });
    const first = base.choices[0].logprobs.content[0].token;
    const ids = (await (await fetch(`${srv.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: first, add_special_tokens: false }) })).json()).tokens;
    assert.equal(ids.length, 1, `token text ${JSON.stringify(first)} round-trips to one id`);
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1, temperature: 0, logprobs: true, ignore_eos: true, logit_bias: { [ids[0]]: -100 } });
    assert.notEqual(r.choices[0].logprobs.content[0].token, first);
  });

  test('tools reach the template and plain output stays content', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages, max_tokens: 4, temperature: 0,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'auto' });
    assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
  });
});

describe('prefix caching', () => {
  test('a shared system prompt is computed once: the next request reports it in cached_tokens', async () => {
    const system = 'You are a careful assistant. ' + Array.from({ length: 12 }, (_, i) => `Rule ${i}: answer in plain words.`).join(' ');
    const ask = (q, extra = {}) => client.chat.completions.create({
      model: MODEL, messages: [{ role: 'system', content: system }, { role: 'user', content: q }], max_tokens: 4,
      temperature: 0, ...extra,
    });
    const first = await ask('Which rule comes first?');
    assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0, 'a cold prompt has nothing cached');
    const second = await ask('And which one comes last?');
    const cached = second.usage.prompt_tokens_details.cached_tokens;
    // The shared system part (~270 of the ~290 prompt tokens) in whole 16-token KV blocks; the question differs.
    assert.equal(cached % 16, 0);
    assert.ok(cached >= first.usage.prompt_tokens - 48 && cached < second.usage.prompt_tokens,
      `cached ${cached} of ${second.usage.prompt_tokens} (the first prompt had ${first.usage.prompt_tokens})`);
    // Streamed, the usage chunk says the same.
    const chunks = await collect(await ask('Is there a rule about words?', { stream: true, stream_options: { include_usage: true } }));
    const usage = chunks.at(-1).usage;
    assert.ok(usage.prompt_tokens_details.cached_tokens >= cached - 16, JSON.stringify(usage));
  });
});

describe('legacy completions', () => {
  test('non-streaming and streaming agree; echo and legacy logprobs', async () => {
    const whole = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
    assert.equal(whole.object, 'text_completion');
    const s = await collect(await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true } }));
    assert.equal(streamText(s), whole.choices[0].text);
    assert.deepEqual(s[s.length - 1].usage, whole.usage);
    const echo = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, echo: true, logprobs: 2 });
    assert.equal(echo.choices[0].text, 'Once upon a time' + whole.choices[0].text);
    const lp = echo.choices[0].logprobs;
    assert.equal(lp.tokens.length, lp.token_logprobs.length);
    assert.equal(lp.tokens.length, echo.usage.prompt_tokens + echo.usage.completion_tokens);
    assert.equal(lp.token_logprobs[0], null, 'the first prompt token has no logprob');
    assert.ok(lp.text_offset.every((v, i) => i === 0 || v >= lp.text_offset[i - 1]));
  });

  test('prompt forms: list of strings, token ids, list of token-id lists; choices are prompt-major', async () => {
    const ids = (await (await fetch(`${srv.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: 'Hello world' }) })).json()).tokens;
    const byText = await client.completions.create({ model: MODEL, prompt: 'Hello world', max_tokens: 4, temperature: 0 });
    const byIds = await client.completions.create({ model: MODEL, prompt: ids, max_tokens: 4, temperature: 0 });
    assert.equal(byIds.choices[0].text, byText.choices[0].text);
    const batch = await client.completions.create({ model: MODEL, prompt: [ids, ids.slice(0, 2)], max_tokens: 4, temperature: 0, n: 2 });
    assert.equal(batch.choices.length, 4);
    assert.deepEqual(batch.choices.map((c) => c.index), [0, 1, 2, 3]);
    assert.equal(batch.choices[0].text, byText.choices[0].text);
    const strings = await client.completions.create({ model: MODEL, prompt: ['Hello world', 'Bye'], max_tokens: 4, temperature: 0 });
    assert.equal(strings.choices[0].text, byText.choices[0].text);
  });

  test('tokenize and detokenize round-trip', async () => {
    const t = await (await fetch(`${srv.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: 'rivers and lakes', add_special_tokens: false }) })).json();
    const d = await (await fetch(`${srv.url}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: t.tokens }) })).json();
    assert.equal(d.prompt, 'rivers and lakes');
    assert.equal(t.count, t.tokens.length);
  });
});

describe('errors through the SDK', () => {
  test('400 names the parameter and the limit', async () => {
    await assert.rejects(client.chat.completions.create({ model: MODEL, messages, temperature: 5 }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'temperature');
      assert.match(e.message, /between 0 and 2/);
      return true;
    });
    await assert.rejects(client.chat.completions.create({ model: MODEL, messages, n: 50 }), (e) => e.status === 400 && /between 1 and 4/.test(e.message));
    await assert.rejects(client.chat.completions.create({ model: MODEL, messages, response_format: { type: 'json_object' } }), (e) => e.status === 400 && /not supported yet/.test(e.message));
  });

  test('404 for an unknown model', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages }), (e) => e.status === 404 && e.code === 'model_not_found');
  });

  test('a prompt longer than the context is 400 with the token count and the limit', async () => {
    const ctx = (await client.models.list()).data[0].max_model_len;
    await assert.rejects(client.completions.create({ model: MODEL, prompt: 'word '.repeat(ctx * 2), max_tokens: 1 }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, new RegExp(`context length is ${ctx} tokens`));
      assert.match(e.message, /prompt has \d+ tokens/);
      return true;
    });
  });
});

describe('max_tokens and the context', () => {
  test('without max_tokens a chat may fill the context; an oversized max_tokens is 400 naming it', async () => {
    const ctx = (await client.models.list()).data[0].max_model_len;
    const r = await client.chat.completions.create({ model: MODEL, messages, temperature: 0 });
    assert.ok(r.usage.total_tokens <= ctx, `${r.usage.total_tokens} <= ${ctx}`);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    await assert.rejects(client.chat.completions.create({ model: MODEL, messages, max_tokens: ctx - 1 }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'max_tokens');
      assert.match(e.message, /context length is \d+ tokens: at most \d+ can be generated/);
      return true;
    });
  });
});

describe('concurrency and cancellation', () => {
  test('16 concurrent streams all complete with their own text', async () => {
    const runs = Array.from({ length: 16 }, (_, i) => client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: `Story number ${i}` }], max_tokens: 8, temperature: 1, seed: i,
      stream: true, stream_options: { include_usage: true } }).then(collect));
    const all = await Promise.all(runs);
    for (const chunks of all) {
      const last = chunks[chunks.length - 1];
      assert.ok(last.usage.completion_tokens >= 1);
      assert.ok(chunks.some((c) => c.choices[0]?.finish_reason));
    }
    // Batching does not change a request's tokens: a lone rerun of stream 3 gives the same text.
    const alone = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Story number 3' }], max_tokens: 8, temperature: 1, seed: 3 });
    assert.equal(streamText(all[3]), alone.choices[0].message.content);
  });

  test('aborted streams cancel their generation and free their slots (strata_slots_busy back to 0)', async () => {
    // Every window is slowed by 5 ms so that a stream is still generating when its client goes away.
    const slow = await startServer(['--max-slots', '4', '--enable-debug-faults', '--debug-faults', 'slow@every=1:ms=5']);
    try {
      const c = new OpenAI({ baseURL: `${slow.url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120000 });
      const scrape = async () => (await fetch(`${slow.url}/metrics`)).text();
      const before = metric(await scrape(), 'strata_generation_tokens_total');
      const maxTokens = 400;
      const aborted = Array.from({ length: 6 }, async () => {
        const ac = new AbortController();
        const stream = await c.chat.completions.create({ messages, max_tokens: maxTokens, ignore_eos: true, stream: true }, { signal: ac.signal });
        try {
          let n = 0;
          for await (const _ of stream) if (++n === 3) ac.abort();
        } catch (e) {
          assert.ok(e.name === 'AbortError' || /abort/i.test(String(e)), String(e));
        }
      });
      await Promise.all(aborted);
      const freed = await waitFor(async () => metric(await scrape(), 'strata_slots_busy') === 0, { timeoutMs: 15000 });
      assert.ok(freed, 'strata_slots_busy back to 0 after the clients went away');
      const generated = metric(await scrape(), 'strata_generation_tokens_total') - (Number.isNaN(before) ? 0 : before);
      assert.ok(generated < 6 * maxTokens / 2, `cancelled early: ${generated} of ${6 * maxTokens} tokens generated`);
      const r = await c.chat.completions.create({ messages, max_tokens: 2 });
      assert.equal(r.choices.length, 1, 'and the server still serves');
    } finally {
      await slow.stop();
    }
  });
});

describe('server options', () => {
  test('--api-key: 401 without or with a wrong key, /health stays open', async () => {
    const keyed = await startServer(['--api-key', 'e2e-secret']);
    try {
      const bad = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
      await assert.rejects(bad.chat.completions.create({ model: 'x', messages }), (e) => e.status === 401);
      const good = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'e2e-secret', maxRetries: 0 });
      const r = await good.chat.completions.create({ messages, max_tokens: 2 });
      assert.equal(r.choices.length, 1);
      assert.equal((await fetch(`${keyed.url}/health`)).status, 200);
      assert.equal((await fetch(`${keyed.url}/v1/models`)).status, 401);
    } finally {
      await keyed.stop();
    }
  });

  test('--max-body-bytes: 413; --max-queued: 429 when the queue is full', async () => {
    const small = await startServer(['--max-body-bytes', '2048', '--max-slots', '1', '--max-queued', '1']);
    try {
      const c = new OpenAI({ baseURL: `${small.url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120000 });
      await assert.rejects(c.chat.completions.create({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] }), (e) => e.status === 413);
      const results = await Promise.allSettled(Array.from({ length: 12 }, () =>
        c.chat.completions.create({ messages, max_tokens: 64, ignore_eos: true })));
      const statuses = results.map((r) => (r.status === 'fulfilled' ? 200 : r.reason.status));
      assert.ok(statuses.includes(429), `some requests get 429: ${statuses}`);
      assert.ok(statuses.includes(200), `and the accepted ones complete: ${statuses}`);
      assert.ok(statuses.every((s) => s === 200 || s === 429), `${statuses}`);
    } finally {
      await small.stop();
    }
  });

  test('SIGTERM under load drains: every accepted request completes and the process exits 0', async () => {
    // Each window is slowed to 20 ms so that eight 48-token requests (four slots) outlive the SIGTERM.
    const s = await startServer(['--shutdown-timeout', '60', '--enable-debug-faults',
      '--debug-faults', 'slow@every=1:ms=20']);
    let stopped = null;
    try {
      const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120000 });
      const running = Array.from({ length: 8 }, (_, i) =>
        c.chat.completions.create({ messages, max_tokens: 48, ignore_eos: true, seed: i, temperature: 0.7 }));
      const settled = Promise.allSettled(running);
      // SIGTERM only once the engine holds all eight (running or queued): those are the accepted ones.
      const held = async () => {
        const text = await (await fetch(`${s.url}/metrics`)).text();
        const gauge = (name) => Number((text.match(new RegExp(`^${name} (\\S+)$`, 'm')) || [0, 0])[1]);
        return gauge('strata_requests_running') + gauge('strata_requests_waiting');
      };
      let done = false;
      settled.then(() => { done = true; });
      let n = 0;
      for (let i = 0; i < 800 && !done && (n = await held()) < 8; ++i) await new Promise((r) => setTimeout(r, 25));
      if (n < 8) {
        const early = (await settled).map((r) => (r.status === 'fulfilled' ? 'ok' : String(r.reason)));
        assert.fail(`only ${n} of 8 requests reached the engine before they ended: ${early.join('; ')}`);
      }
      stopped = s.stop();
      const results = await Promise.all(running);
      for (const r of results) assert.equal(r.usage.completion_tokens, 48);
      assert.equal((await stopped).code, 0);
    } finally {
      if (!stopped) await s.stop();
    }
  });
});
