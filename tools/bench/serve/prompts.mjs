// Prompts of about N tokens each, different for every request (so prefix caching does not turn the load
// into one prompt) and reproducible from --seed. Lengths are calibrated against the server's own tokenizer
// through /tokenize when it answers; otherwise they are estimated and the report says so.

const WORDS = (
  'time year people way day man thing woman life child world school state family student group country ' +
  'problem hand part place case week company system program question work government number night point ' +
  'home water room mother area money story fact month lot right study book eye job word business issue ' +
  'side kind head house service friend father power hour game line end member law car city community name ' +
  'president team minute idea kid body information back parent face others level office door health person ' +
  'art war history party result change morning reason research girl guy moment air teacher force education ' +
  'river garden window bridge letter market winter summer answer music paper table forest island ' +
  'engine signal harbor valley mountain street orange yellow silver quiet gentle rapid bright simple ' +
  'careful honest early late small large green blue ancient modern open closed warm cold north south'
).split(' ');

// splitmix32: a tiny seeded generator, enough to pick words reproducibly.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

function wordsFor(index, seed, n) {
  const next = rng(seed * 1000003 + index * 7919 + 1);
  const out = [];
  for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(next() * WORDS.length)]);
  return out;
}

// Without a tokenizer to ask, assume about 1.3 tokens per common English word (typical of BPE vocabularies).
const ESTIMATED_TOKENS_PER_WORD = 1.3;

// `countTokens(text)` returns the token count, or null when the server cannot tell. Each prompt is searched
// for the word count whose token count is closest to the target, starting from the measured ratio.
export async function buildPrompts({ count, promptTokens, seed, countTokens }) {
  const target = Math.max(1, promptTokens);
  let ratio = ESTIMATED_TOKENS_PER_WORD;
  let calibrated = false;
  if (countTokens) {
    const probe = wordsFor(0, seed, Math.max(16, target)).join(' ');
    const c = await countTokens(probe);
    if (c !== null && c > 0) {
      ratio = c / Math.max(16, target);
      calibrated = true;
    }
  }
  const prompts = [];
  const tokenCounts = [];
  for (let i = 0; i < count; i++) {
    const pool = wordsFor(i, seed, Math.ceil((target / ratio) * 2) + 16);
    let k = Math.max(1, Math.min(pool.length, Math.round(target / ratio)));
    let best = { k, tokens: null };
    if (calibrated) {
      const tried = new Map();
      for (let step = 0; step < 8 && !tried.has(k); step++) {
        const c = await countTokens(pool.slice(0, k).join(' '));
        if (c === null) break;
        tried.set(k, c);
        if (best.tokens === null || Math.abs(c - target) < Math.abs(best.tokens - target)) best = { k, tokens: c };
        if (c === target) break;
        const delta = (target - c) / ratio;
        const move = delta > 0 ? Math.max(1, Math.round(delta)) : Math.min(-1, Math.round(delta));
        k = Math.max(1, Math.min(pool.length, k + move));
      }
    }
    prompts.push(pool.slice(0, best.k).join(' '));
    tokenCounts.push(best.tokens);
  }
  return { prompts, tokenCounts, calibrated, tokensPerWord: ratio };
}

// A counter over the server's /tokenize (vLLM's shape, also spoken by Strata); null on any failure so the
// caller falls back to the estimate instead of failing the run.
export function tokenizeCounter(baseUrl, model, headers = {}) {
  return async (text) => {
    try {
      const res = await fetch(`${baseUrl}/tokenize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model, prompt: text, add_special_tokens: false }),
        signal: AbortSignal.timeout(30000),
      });
      if (res.status !== 200) return null;
      const j = await res.json();
      if (Number.isInteger(j.count)) return j.count;
      if (Array.isArray(j.tokens)) return j.tokens.length;
      return null;
    } catch {
      return null;
    }
  };
}
