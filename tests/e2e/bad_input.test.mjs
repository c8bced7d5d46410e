// The bad-input suite: raw HTTP requests a well-behaved client would never send. Every one must get a 4xx
// with an OpenAI-shaped error whose message names the field at fault, and the server must keep serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { rawRequest } from './lib/raw_http.mjs';

let srv;
before(async () => {
  srv = await startServer(['--max-n', '8']);
});
after(async () => {
  const r = await srv.stop();
  assert.equal(r.code, 0, 'strata exits 0 on SIGTERM');
});

const user = [{ role: 'user', content: 'hi' }];
const chat = (extra) => JSON.stringify({ messages: user, max_tokens: 2, ...extra });
const chatRaw = (fragment) => `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,${fragment}}`;
const deep = (open, n) => open.repeat(n);
const tool = (fn) => ({ type: 'function', function: fn });

// [name, body, field named in the message (or null), expected status, path]
const cases = [
  // malformed and truncated
  ['empty body', '', 'empty'],
  ['lone brace', '{', 'truncated'],
  ['truncated array', '{"messages": [', 'truncated'],
  ['truncated string', '{"model": "abc', 'truncated'],
  ['trailing comma', '{"model": "x",}', 'string key'],
  ['not json at all', 'hello there', 'unexpected character'],
  ['single quotes', "{'messages': []}", 'string key'],
  ['data after the document', chat({}) + ' {}', 'after the end'],
  ['array body', '[1,2]', 'JSON object'],
  ['string body', '"text"', 'JSON object'],
  ['null body', 'null', 'JSON object'],
  ['leading zero number', chatRaw('"temperature": 01'), 'leading zeros'],
  ['bare minus', chatRaw('"temperature": -'), 'digits'],
  // encodings
  ['invalid UTF-8 byte in content', Buffer.from('{"messages":[{"role":"user","content":"a\xff"}]}', 'latin1'), 'messages[0].content'],
  ['overlong UTF-8', Buffer.from('{"messages":[{"role":"user","content":"\xc0\xaf"}]}', 'latin1'), 'messages[0].content'],
  ['UTF-8 encoded surrogate', Buffer.from('{"messages":[{"role":"user","content":"\xed\xa0\x80"}]}', 'latin1'), 'messages[0].content'],
  ['truncated UTF-8 sequence', Buffer.from('{"model":"\xe2\x82"}', 'latin1'), 'model'],
  ['lone high surrogate', '{"messages":[{"role":"user","content":"\\ud800"}]}', 'surrogate'],
  ['lone low surrogate', '{"messages":[{"role":"user","content":"x\\udc00y"}]}', 'surrogate'],
  ['high surrogate without low', '{"messages":[{"role":"user","content":"\\ud83d\\u0041"}]}', 'surrogate'],
  ['raw control character', '{"messages":[{"role":"user","content":"a\u0001b"}]}', 'control character'],
  ['invalid escape', '{"messages":[{"role":"user","content":"\\q"}]}', 'escape'],
  // numbers JSON does not have
  ['NaN', chatRaw('"temperature": NaN'), 'NaN'],
  ['Infinity', chatRaw('"temperature": Infinity'), 'Infinity'],
  ['-Infinity', chatRaw('"temperature": -Infinity'), 'Infinity'],
  ['number overflow', chatRaw('"temperature": 1e999'), 'temperature'],
  ['max_tokens overflow', chatRaw('"max_tokens": 1e999'), 'max_tokens'],
  // nesting
  ['100k-deep arrays', deep('[', 100000), 'nesting'],
  ['100k-deep objects', deep('{"a":', 100000), 'nesting'],
  ['deep value inside a valid field', chatRaw(`"chat_template_kwargs": ${deep('[', 70)}${deep(']', 70)}`), 'nesting'],
  // wrong types
  ['messages is a string', JSON.stringify({ messages: 'hi' }), 'messages'],
  ['messages is an object', JSON.stringify({ messages: { role: 'user' } }), 'messages'],
  ['messages is empty', JSON.stringify({ messages: [] }), 'messages'],
  ['messages missing', JSON.stringify({ model: 'x' }), 'messages'],
  ['message is a number', JSON.stringify({ messages: [1] }), 'messages[0]'],
  ['role missing', JSON.stringify({ messages: [{ content: 'x' }] }), 'messages[0].role'],
  ['role is a number', JSON.stringify({ messages: [{ role: 5, content: 'x' }] }), 'messages[0].role'],
  ['role unknown', JSON.stringify({ messages: [{ role: 'wizard', content: 'x' }] }), 'messages[0].role'],
  ['content is a number', JSON.stringify({ messages: [{ role: 'user', content: 5 }] }), 'messages[0].content'],
  ['image content part', JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }), 'messages[0].content[0].type'],
  ['text part without text', JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'text' }] }] }), 'messages[0].content[0].text'],
  ['model is a number', chat({ model: 7 }), 'model'],
  ['temperature is a string', chat({ temperature: 'hot' }), 'temperature'],
  ['top_p is a string', chat({ top_p: '0.5' }), 'top_p'],
  ['n is a string', chat({ n: '2' }), "'n'"],
  ['max_tokens is a string', chat({ max_tokens: '5' }), 'max_tokens'],
  ['max_tokens is fractional', chat({ max_tokens: 1.5 }), 'max_tokens'],
  ['stream is a string', chat({ stream: 'true' }), 'stream'],
  ['stop is a number', chat({ stop: 5 }), 'stop'],
  ['stop list holds a number', chat({ stop: ['a', 5] }), 'stop[1]'],
  ['seed is a string', chat({ seed: 'abc' }), 'seed'],
  ['seed is fractional', chat({ seed: 1.5 }), 'seed'],
  ['logprobs is a string', chat({ logprobs: 'yes' }), 'logprobs'],
  ['stream_options is a string', chat({ stream: true, stream_options: 'usage' }), 'stream_options'],
  ['chat_template_kwargs is a list', chat({ chat_template_kwargs: [1] }), 'chat_template_kwargs'],
  // out of range
  ['temperature negative', chat({ temperature: -1 }), 'temperature'],
  ['temperature too high', chat({ temperature: 3 }), 'temperature'],
  ['top_p zero', chat({ top_p: 0 }), 'top_p'],
  ['top_p above one', chat({ top_p: 1.1 }), 'top_p'],
  ['n zero', chat({ n: 0 }), "'n'"],
  ['huge n', chat({ n: 100000 }), "'n'"],
  ['max_tokens zero', chat({ max_tokens: 0 }), 'max_tokens'],
  ['huge max_tokens', chat({ max_tokens: 1000000000 }), 'max_tokens'],
  ['negative max_completion_tokens', chat({ max_completion_tokens: -5 }), 'max_completion_tokens'],
  ['presence_penalty too high', chat({ presence_penalty: 5 }), 'presence_penalty'],
  ['frequency_penalty too low', chat({ frequency_penalty: -5 }), 'frequency_penalty'],
  ['repetition_penalty zero', chat({ repetition_penalty: 0 }), 'repetition_penalty'],
  ['min_p above one', chat({ min_p: 2 }), 'min_p'],
  ['top_k below -1', chat({ top_k: -2 }), 'top_k'],
  ['top_logprobs without logprobs', chat({ top_logprobs: 2 }), 'top_logprobs'],
  ['top_logprobs above 20', chat({ logprobs: true, top_logprobs: 21 }), 'top_logprobs'],
  ['huge stop list', chat({ stop: Array.from({ length: 1000 }, (_, i) => `s${i}`) }), 'stop'],
  ['huge stop string', chat({ stop: 'x'.repeat(100000) }), 'stop'],
  ['empty stop string', chat({ stop: [''] }), 'stop[0]'],
  ['min_tokens above max_tokens', chat({ min_tokens: 10, max_tokens: 2 }), 'min_tokens'],
  ['stop_token_ids out of vocabulary', chat({ stop_token_ids: [1e9] }), 'stop_token_ids[0]'],
  // logit_bias
  ['logit_bias is a list', chat({ logit_bias: [1, 2] }), 'logit_bias'],
  ['logit_bias key not a number', chat({ logit_bias: { abc: 1 } }), 'logit_bias.abc'],
  ['logit_bias key outside the vocabulary', chat({ logit_bias: { 1000000000: 1 } }), 'logit_bias.1000000000'],
  ['logit_bias key negative', chat({ logit_bias: { '-1': 1 } }), 'logit_bias.-1'],
  ['logit_bias value too large', chat({ logit_bias: { 5: 1000 } }), 'logit_bias.5'],
  ['logit_bias value a string', chat({ logit_bias: { 5: 'big' } }), 'logit_bias.5'],
  ['logit_bias with too many entries', chat({ logit_bias: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [String(i % 200), 1]).concat(Array.from({ length: 2000 }, (_, i) => [`${i}0`, 1]))) }), 'logit_bias'],
  // tools
  ['tools is a string', chat({ tools: 'get_weather' }), 'tools'],
  ['tool is a number', chat({ tools: [1] }), 'tools[0]'],
  ['tool type unsupported', chat({ tools: [{ type: 'retrieval' }] }), 'tools[0].type'],
  ['tool without function', chat({ tools: [{ type: 'function' }] }), 'tools[0].function'],
  ['tool function without name', chat({ tools: [tool({ description: 'x' })] }), 'tools[0].function.name'],
  ['tool name with spaces', chat({ tools: [tool({ name: 'get weather' })] }), 'tools[0].function.name'],
  ['tool parameters not an object', chat({ tools: [tool({ name: 'f', parameters: 'string' })] }), 'tools[0].function.parameters'],
  ['tool_choice unknown word', chat({ tools: [tool({ name: 'f' })], tool_choice: 'always' }), 'tool_choice'],
  ['tool_choice names a missing tool', chat({ tools: [tool({ name: 'f' })], tool_choice: { type: 'function', function: { name: 'g' } } }), 'tool_choice.function.name'],
  ['tool_choice required without tools', chat({ tool_choice: 'required' }), 'tool_choice'],
  ['tool_calls on a user message', JSON.stringify({ messages: [{ role: 'user', content: 'x', tool_calls: [] }] }), 'messages[0].tool_calls'],
  ['assistant tool call without function', JSON.stringify({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function' }] }] }), 'messages[0].tool_calls[0].function'],
  // response_format
  ['json_object not supported yet', chat({ response_format: { type: 'json_object' } }), 'not supported yet'],
  ['json_schema not supported yet', chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }), 'not supported yet'],
  ['unknown response_format', chat({ response_format: { type: 'yaml' } }), 'response_format.type'],
  // completions
  ['completion without prompt', JSON.stringify({ max_tokens: 2 }), 'prompt', 400, '/v1/completions'],
  ['completion prompt a number', JSON.stringify({ prompt: 5 }), 'prompt', 400, '/v1/completions'],
  ['completion prompt empty list', JSON.stringify({ prompt: [] }), 'prompt', 400, '/v1/completions'],
  ['completion token outside the vocabulary', JSON.stringify({ prompt: [1, 99999999] }), 'prompt[1]', 400, '/v1/completions'],
  ['completion mixed prompt list', JSON.stringify({ prompt: ['a', 3] }), 'prompt[1]', 400, '/v1/completions'],
  ['completion nested list with a string', JSON.stringify({ prompt: [[1, 2], [3, 'x']] }), 'prompt[1][1]', 400, '/v1/completions'],
  ['completion logprobs above 20', JSON.stringify({ prompt: 'x', logprobs: 21 }), 'logprobs', 400, '/v1/completions'],
  ['completion echo a string', JSON.stringify({ prompt: 'x', echo: 'yes' }), 'echo', 400, '/v1/completions'],
  ['completion prompt longer than the context', JSON.stringify({ prompt: 'lorem ipsum '.repeat(20000), max_tokens: 1 }), 'tokens', 400, '/v1/completions'],
  // tokenize
  ['tokenize without text', JSON.stringify({}), 'prompt', 400, '/tokenize'],
  ['detokenize tokens a string', JSON.stringify({ tokens: 'abc' }), 'tokens', 400, '/detokenize'],
  ['detokenize id outside the vocabulary', JSON.stringify({ tokens: [1e9] }), 'tokens[0]', 400, '/detokenize'],
  // routing and models
  ['unknown model', chat({ model: 'gpt-4o' }), 'gpt-4o', 404],
  ['unknown route', '{}', '/v1/nothing', 404, '/v1/nothing'],
];

test(`the suite has at least 60 cases (${cases.length})`, () => {
  assert.ok(cases.length >= 60);
});

for (const [name, body, field, status = 400, path = '/v1/chat/completions'] of cases) {
  test(`bad input: ${name} -> ${status}`, async () => {
    const r = await rawRequest(srv.port, { path, body });
    assert.equal(r.status, status, `status for ${name}: ${r.body}`);
    const j = JSON.parse(r.body);
    assert.equal(typeof j.error, 'object', 'OpenAI-shaped error');
    assert.ok(j.error.message.length > 0);
    assert.ok('type' in j.error && 'param' in j.error && 'code' in j.error);
    if (field) assert.ok(j.error.message.includes(field), `message names "${field}": ${j.error.message}`);
    const health = await rawRequest(srv.port, { method: 'GET', path: '/health' });
    assert.equal(health.status, 200, 'the server keeps serving');
  });
}

test('a 64 MB body is refused with 413 and the server keeps serving', async () => {
  const big = Buffer.alloc(64 << 20, 'a');
  big.write('{"messages":"');
  big.write('"}', big.length - 2);
  const r = await rawRequest(srv.port, { body: big, timeoutMs: 120000 });
  assert.equal(r.status, 413);
  assert.match(JSON.parse(r.body).error.message, /limit of \d+ bytes/);
  assert.equal((await rawRequest(srv.port, { method: 'GET', path: '/health' })).status, 200);
});

test('a body shorter than its Content-Length claims is treated as truncated JSON', async () => {
  const body = chat({});
  const r = await rawRequest(srv.port, { body: body.slice(0, 10), contentLength: 10 });
  assert.equal(r.status, 400);
});

test('after all of it, a good request still succeeds', async () => {
  const r = await rawRequest(srv.port, { body: chat({ temperature: 0 }) });
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).object, 'chat.completion');
  assert.ok(srv.alive());
});
