#!/usr/bin/env python3
"""Train strata-tiny (a small Qwen3 model) and its draft model on the GPU machine, offline.

  python3 tools/train/train_tiny.py --out OUTDIR            # the real run (about 5 minutes on one H200)
  python3 tools/train/train_tiny.py --out OUTDIR --smoke    # every stage on tiny sizes (well under a minute)

Stages: corpus (the .py files of the installed packages, tools/train/corpus.py) -> byte-level BPE tokenizer
(tokenizers, Qwen2-style split) -> token arrays -> target model (time-budgeted) -> draft model (time-budgeted)
-> held-out loss -> draft acceptance under greedy decoding -> save_pretrained in bf16 -> golden.json (greedy
output of the saved model reloaded in float32 on the CPU, and on the GPU for comparison) -> model cards.

OUTDIR/strata-tiny and OUTDIR/strata-tiny-draft are the shippable model directories; OUTDIR/train_report.json
holds every number the cards quote.
"""
import argparse
import json
import math
import os
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

T0 = time.time()
DEVICE = "cuda"   # --device cpu exists only to dry-run the script's logic on a machine without a GPU

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2's pre-tokenizer split: contractions, letter runs (with one leading non-letter), single digits,
# punctuation runs, newlines, trailing spaces, spaces.
SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
         r"|\s+(?!\S)|\s+")
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
CHAT_MESSAGES = [{"role": "user", "content": "Write a Python function that reverses a string."}]
CODE_PROMPTS = ["def fibonacci(n):\n", "import numpy as np\n", "class Stack:\n    def __init__(self):\n"]


def log(msg):
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


def render_chatml(messages, add_generation_prompt=True):
    """What CHATML renders, written out: the golden prompt must not depend on a template engine."""
    s = "".join("<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n" for m in messages)
    return s + ("<|im_start|>assistant\n" if add_generation_prompt else "")


# --------------------------------------------------------------------------------------------- tokenizer

def qwen_style_components():
    """The JSON shapes Qwen's tokenizer.json uses (and engine/tokenizer reads) for these four parts."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": SPLIT}, "behavior": "Isolated", "invert": False},
            dict(byte_level)]},
        "post_processor": dict(byte_level),
        "decoder": dict(byte_level),
    }


def train_tokenizer(texts, vocab_size, path):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    tok.save(path)
    # Rewrite the four components in exactly Qwen's shapes (the library's own serialization may add or
    # rename fields between versions), then reload from the file, so what we encode with is what ships.
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    changed = []
    for key, want in qwen_style_components().items():
        if j.get(key) != want:
            changed.append(key)
            j[key] = want
    with open(path, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=1)
    if changed:
        log(f"tokenizer: rewrote {changed} of tokenizer.json to Qwen's JSON shapes")
    tok = Tokenizer.from_file(path)
    for i, s in enumerate(SPECIALS):
        if tok.token_to_id(s) != i:
            raise RuntimeError(f"tokenizer: special token {s} has id {tok.token_to_id(s)}, expected {i}")
    return tok


def check_round_trip(tok, samples):
    import unicodedata
    bad = 0
    for s in samples:
        s = s[:2000]
        back = tok.decode(tok.encode(s, add_special_tokens=False).ids, skip_special_tokens=False)
        if back != unicodedata.normalize("NFC", s):
            bad += 1
    # Byte-level BPE round-trips every string up to NFC; a rare miss can only come from Python and the
    # library disagreeing on NFC for very new characters, so only a systematic failure stops the run.
    if bad > len(samples) // 10:
        raise RuntimeError(f"tokenizer: {bad} of {len(samples)} samples do not round-trip")
    if bad:
        log(f"tokenizer: warning: {bad} of {len(samples)} samples do not round-trip exactly")
    chat = render_chatml(CHAT_MESSAGES)
    ids = tok.encode(chat, add_special_tokens=False).ids
    if ids[0] != SPECIALS.index("<|im_start|>") or SPECIALS.index("<|im_end|>") not in ids:
        raise RuntimeError(f"tokenizer: the ChatML markers are not single special tokens: {ids[:8]}")


def encode_all(tok, texts, eot, batch=512):
    """One uint16 array: every text's ids followed by <|endoftext|>."""
    fast = getattr(tok, "encode_batch_fast", None)   # no offsets: faster, where the library has it

    def enc(chunk):
        if fast is not None:
            try:
                return fast(chunk, add_special_tokens=False)
            except TypeError:
                pass
        return tok.encode_batch(chunk, add_special_tokens=False)

    parts = []
    for i in range(0, len(texts), batch):
        for e in enc(texts[i:i + batch]):
            parts.append(np.asarray(e.ids, dtype=np.uint16))
            parts.append(np.asarray([eot], dtype=np.uint16))
    return np.concatenate(parts)


def save_tokenizer_files(tok_path, d, im_end, eot, max_len):
    import shutil
    shutil.copyfile(tok_path, os.path.join(d, "tokenizer.json"))
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|im_end|>",
           "pad_token": "<|endoftext|>", "unk_token": None, "model_max_length": max_len,
           "clean_up_tokenization_spaces": False, "add_bos_token": False, "chat_template": CHATML}
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
    with open(os.path.join(d, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token_id": None, "eos_token_id": [im_end, eot], "pad_token_id": eot}, f, indent=2)


# --------------------------------------------------------------------------------------------- models

def rope_kwargs(theta):
    """transformers v5 takes rope_parameters; v4 takes rope_theta."""
    if int(transformers.__version__.split(".")[0]) >= 5:
        return {"rope_parameters": {"rope_type": "default", "rope_theta": theta}}
    return {"rope_theta": theta}


def make_config(vocab, layers, hidden, heads, kv_heads, head_dim, intermediate, max_pos, im_end, eot):
    return transformers.Qwen3Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
        max_position_embeddings=max_pos, rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu",
        attention_bias=False, attention_dropout=0.0, use_sliding_window=False, initializer_range=0.02,
        bos_token_id=None, eos_token_id=im_end, pad_token_id=eot, use_cache=False, **rope_kwargs(10000.0))


def new_model(cfg, device):
    """A fresh Qwen3ForCausalLM on the device, asking for PyTorch's fused attention (sdpa)."""
    try:
        cfg._attn_implementation = "sdpa"
    except Exception as e:  # transformers picks its default then; the log line after says which
        log(f"cannot request sdpa attention: {e!r}")
    return transformers.Qwen3ForCausalLM(cfg).to(device)


def count_params(model):
    # Tied weights are one tensor: parameters() yields it once.
    return sum(p.numel() for p in model.parameters())


class Batches:
    """Random windows of the training tokens, drawn on the GPU."""

    def __init__(self, tokens_np, device, seed):
        self.data = torch.from_numpy(tokens_np.astype(np.int64)).to(device)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)
        self.device = device

    def get(self, batch, seq):
        n = self.data.numel() - seq - 1
        starts = torch.randint(0, n, (batch, 1), generator=self.gen, device=self.device)
        idx = starts + torch.arange(seq + 1, device=self.device)
        w = self.data[idx]
        return w[:, :-1], w[:, 1:]


def make_optimizer(model, lr, weight_decay):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    except (TypeError, RuntimeError):
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)


def train_model(name, model, batches, seconds, lr, tokens_per_step, seq, long_seq, long_frac, warmup_steps,
                log_every, weight_decay=0.1, teacher=None, distill_weight=0.0):
    """AdamW, linear warmup then cosine decay to lr/10 over the wall-clock budget. The last long_frac of the
    budget trains on long_seq windows (same tokens per step) so positions up to long_seq are seen.
    With a teacher, the loss is (1 - w) * cross-entropy + w * KL(teacher || model) on the same windows."""
    model.train()
    opt = make_optimizer(model, lr, weight_decay)
    vocab = model.config.vocab_size
    step, tokens_seen = 0, 0
    losses = []
    t_start = time.time()
    t_warm_end = None
    last_log_t, last_log_tokens = t_start, 0
    while True:
        elapsed = time.time() - t_start
        if elapsed >= seconds:
            break
        frac = elapsed / seconds
        if step < warmup_steps:
            cur_lr = lr * (step + 1) / warmup_steps
        else:
            if t_warm_end is None:
                t_warm_end = elapsed
            p = min(1.0, (elapsed - t_warm_end) / max(1e-6, seconds - t_warm_end))
            cur_lr = lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * p)))
        for g in opt.param_groups:
            g["lr"] = cur_lr
        cur_seq = long_seq if (long_seq > seq and frac >= 1.0 - long_frac) else seq
        batch = max(1, tokens_per_step // cur_seq)
        x, y = batches.get(batch, cur_seq)
        with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
            logits = model(input_ids=x, use_cache=False).logits
        flat = logits.float().view(-1, vocab)
        ce = F.cross_entropy(flat, y.reshape(-1))
        if teacher is not None and distill_weight > 0:
            with torch.no_grad():
                with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
                    t_logits = teacher(input_ids=x, use_cache=False).logits
                t_logp = F.log_softmax(t_logits.float().view(-1, vocab), dim=-1)
            kl = F.kl_div(F.log_softmax(flat, dim=-1), t_logp, log_target=True, reduction="batchmean")
            loss = (1.0 - distill_weight) * ce + distill_weight * kl
        else:
            loss = ce
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens_seen += batch * cur_seq
        if step % log_every == 0 or step == 1:
            lv = ce.item()   # synchronizes: only every log_every steps
            losses.append((step, lv))
            now = time.time()
            tps = (tokens_seen - last_log_tokens) / max(1e-6, now - last_log_t)
            last_log_t, last_log_tokens = now, tokens_seen
            log(f"{name}: step {step} loss {lv:.4f}{'' if loss is ce else f' (with KL {loss.item():.4f})'} lr {cur_lr:.2e} seq {cur_seq} "
                f"{tps / 1e6:.2f}M tok/s elapsed {now - t_start:.0f}/{seconds:.0f}s")
            if not math.isfinite(lv) or not math.isfinite(loss.item()):
                raise RuntimeError(f"{name}: loss is not finite at step {step}")
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    wall = time.time() - t_start
    tail = [lv for _, lv in losses[-5:]]
    log(f"{name}: {step} steps, {tokens_seen / 1e6:.1f}M tokens in {wall:.0f}s")
    model.eval()
    return {"steps": step, "tokens_seen": tokens_seen, "train_seconds": round(wall, 1),
            "tokens_per_second": round(tokens_seen / max(wall, 1e-6)), "peak_lr": lr,
            "last_logged_train_loss": tail[-1] if tail else None, "loss_curve": losses}


@torch.no_grad()
def eval_loss(model, tokens_np, device, seq, max_tokens, batch=64):
    """Mean next-token loss over consecutive non-overlapping windows of the given tokens."""
    n = min(len(tokens_np) - 1, max_tokens) // seq
    if n == 0:
        return None
    data = torch.from_numpy(tokens_np[: n * seq + 1].astype(np.int64)).to(device)
    total, count = 0.0, 0
    vocab = model.config.vocab_size
    for i in range(0, n, batch):
        m = min(batch, n - i)
        idx = (torch.arange(i, i + m, device=device) * seq)[:, None] + torch.arange(seq + 1, device=device)
        w = data[idx]
        with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
            logits = model(input_ids=w[:, :-1], use_cache=False).logits
        loss = F.cross_entropy(logits.float().view(-1, vocab), w[:, 1:].reshape(-1), reduction="sum")
        total += loss.item()
        count += m * seq
    return total / count


# --------------------------------------------------------------------------------------------- acceptance

@torch.no_grad()
def greedy_continue(model, ids, n_new, autocast):
    """Greedy continuation without a KV cache (full recompute; the sequences are short). ids: [B, P] on the
    model's device. Returns (tokens [B, P + n_new], margins [B, n_new] = top1 - top2 logit)."""
    seq = ids
    margins = []
    for _ in range(n_new):
        if autocast:
            with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
                last = model(input_ids=seq, use_cache=False).logits[:, -1, :].float()
        else:
            last = model(input_ids=seq, use_cache=False).logits[:, -1, :].float()
        top = torch.topk(last, 2, dim=-1)
        margins.append(top.values[:, 0] - top.values[:, 1])
        seq = torch.cat([seq, top.indices[:, :1]], dim=1)
    return seq, torch.stack(margins, dim=1)


def accepted_per_block(match, k):
    """match[b][i]: the draft's greedy token equals the target's at generated position i of sequence b. A
    speculative block drafts up to k tokens from the current (target) prefix; it accepts the run of matches
    from there (at most k, and within the sequence), then the target adds one token of its own."""
    out = []
    for row in match:
        n, j = len(row), 0
        while j < n:
            run = 0
            while run < k and j + run < n and row[j + run]:
                run += 1
            out.append(run)
            j += run + 1
    return out


@torch.no_grad()
def draft_matches(draft, seq, prompt_len):
    """seq: [B, P + n] token ids (prompts of P tokens, then the target's greedy continuation). Whether the
    draft's greedy next token, given the target's prefix, equals the target's at each generated position:
    a [B, n] numpy bool array."""
    with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
        dl = draft(input_ids=seq[:, :-1], use_cache=False).logits.float()
    dpred = dl.argmax(dim=-1)                         # dpred[:, p] predicts seq[:, p + 1]
    return (dpred[:, prompt_len - 1:] == seq[:, prompt_len:]).cpu().numpy()


@torch.no_grad()
def acceptance(target, draft, heldout_np, device, n_prompts, prompt_len, n_new, k, seed):
    """The target greedy-decodes n_new tokens after held-out prompts; at each generated position, does the
    draft's greedy next token (given the target's prefix) equal the target's? Plus the mean accepted length
    of k-token draft blocks in speculative decoding (a block accepts the run of matches, at most k, and the
    target then adds one token)."""
    rng = np.random.default_rng(seed)
    limit = len(heldout_np) - prompt_len - 1
    starts = rng.integers(0, limit, size=n_prompts)
    prompts = np.stack([heldout_np[s:s + prompt_len].astype(np.int64) for s in starts])
    ids = torch.from_numpy(prompts).to(device)
    seq, _ = greedy_continue(target, ids, n_new, autocast=True)
    match = draft_matches(draft, seq, prompt_len)     # [B, n_new]
    per_pos_rate = float(match.mean())
    accepted = accepted_per_block(match, k)
    blocks = len(accepted)
    mean_acc = float(np.mean(accepted))
    return {"prompts": n_prompts, "prompt_tokens": prompt_len, "new_tokens": n_new,
            "greedy_token_acceptance": round(per_pos_rate, 4), "k": k,
            "mean_accepted_per_block": round(mean_acc, 3),
            "tokens_per_target_step": round(mean_acc + 1.0, 3), "blocks": blocks}


# --------------------------------------------------------------------------------------------- golden

@torch.no_grad()
def make_golden(model_dir, tok, n_new, device):
    prompts = list(CODE_PROMPTS) + [render_chatml(CHAT_MESSAGES)]
    template_check = None
    try:
        from transformers import AutoTokenizer
        hf_tok = AutoTokenizer.from_pretrained(model_dir)
        rendered = hf_tok.apply_chat_template(CHAT_MESSAGES, tokenize=False, add_generation_prompt=True)
        template_check = {"transformers_render_equal": rendered == prompts[-1],
                          "transformers_ids_equal": all(
                              list(hf_tok(p, add_special_tokens=False)["input_ids"]) ==
                              tok.encode(p, add_special_tokens=False).ids for p in prompts)}
    except Exception as e:  # the golden does not depend on it; record why
        template_check = {"error": repr(e)}
    log(f"golden: transformers tokenizer/template check {template_check}")

    def run(dev, dtype):
        m = transformers.Qwen3ForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager")
        m = m.to(dev).eval()
        out = []
        for text in prompts:
            ids = tok.encode(text, add_special_tokens=False).ids
            seq, margins = greedy_continue(m, torch.tensor([ids], device=dev), n_new, autocast=False)
            out.append((ids, seq[0, len(ids):].tolist(), margins[0].tolist()))
        del m
        return out

    cpu = run("cpu", torch.float32)
    gpu = run(device, torch.float32)
    entries = []
    for text, (ids, greedy, margins), (_, g_greedy, _) in zip(prompts, cpu, gpu):
        agree = 0
        while agree < len(greedy) and greedy[agree] == g_greedy[agree]:
            agree += 1
        entries.append({"text": text, "ids": ids, "greedy": greedy,
                        "greedy_text": tok.decode(greedy, skip_special_tokens=False),
                        "greedy_margins": [round(x, 5) for x in margins], "min_greedy_margin": min(margins),
                        "gpu_float32_greedy": g_greedy, "gpu_agrees_for_tokens": agree})
        log(f"golden: {text[:30]!r} -> {entries[-1]['greedy_text'][:80]!r} (min margin {min(margins):.4f}, "
            f"GPU agrees for {agree}/{len(greedy)})")
    golden = {"model": "strata-tiny", "transformers_version": transformers.__version__,
              "torch_version": torch.__version__, "storage_dtype": "torch.bfloat16",
              "reference": "float32 on CPU, weights loaded from the saved bf16 safetensors, eager attention",
              "rope_inv_freq_dtype": "float32", "new_tokens": n_new, "template_check": template_check,
              "prompts": entries}
    with open(os.path.join(model_dir, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
    return golden


# --------------------------------------------------------------------------------------------- cards

def arch_lines(cfg, params):
    return [f"- architecture: Qwen3ForCausalLM (transformers {transformers.__version__}), {params / 1e6:.1f}M "
            f"parameters (tied input/output embeddings)",
            f"- layers {cfg.num_hidden_layers}, hidden {cfg.hidden_size}, intermediate {cfg.intermediate_size}, "
            f"attention heads {cfg.num_attention_heads} (key/value heads {cfg.num_key_value_heads}, head_dim "
            f"{cfg.head_dim}), vocab {cfg.vocab_size}, RoPE theta 10000, max positions {cfg.max_position_embeddings}",
            "- weights stored in bfloat16 (safetensors)"]


def fmt_loss(x):
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.4f} (perplexity {math.exp(x):.2f})" if x < 50 else f"{x:.4f}"


def spec_section(a):
    """strata-tiny's card section on its draft model (also rewritten by retrain_draft.py)."""
    return f"""## Speculative decoding with strata-tiny-draft
Greedy decoding of {a['new_tokens']} tokens after {a['prompts']} held-out prompts of {a['prompt_tokens']} tokens:
the draft's greedy next token equals the target's at {a['greedy_token_acceptance'] * 100:.1f}% of positions.
With blocks of k={a['k']} drafted tokens, {a['mean_accepted_per_block']:.2f} are accepted per block on average
({a['tokens_per_target_step']:.2f} tokens per target step).
"""


def draft_card(dcfg, d, a):
    return f"""# strata-tiny-draft

The draft model for speculative decoding with `../strata-tiny`: same tokenizer and data, {dcfg.num_hidden_layers}
layer(s), trained with loss (1 - w) * cross-entropy + w * KL(strata-tiny || draft), w = {d.get('distill_weight', 0)}.
See strata-tiny's README.md for the corpus and its licenses.

{chr(10).join(arch_lines(dcfg, d['params']))}

- steps: {d['steps']:,}; tokens seen: {d['tokens_seen']:,}; training time {d['train_seconds']:.0f} s
- train loss: {fmt_loss(d['train_loss'])}; held-out loss: {fmt_loss(d['heldout_loss'])}
- greedy acceptance against strata-tiny: {a['greedy_token_acceptance'] * 100:.1f}% of positions; mean accepted
  length {a['mean_accepted_per_block']:.2f} for k={a['k']} ({a['prompts']} held-out prompts, {a['new_tokens']} tokens each)
""" + self_distill_line(d.get("self_distillation")) + (
        "- training continued from the draft shipped before it (the steps and tokens above are this run's)\n"
        if d.get("continued_from") else "") + (f"- made by `{d['made_by']}`\n" if d.get("made_by") else "")


def self_distill_line(sd):
    """The draft card's line on retrain_draft.py's self-distillation, when it was used."""
    if not sd:
        return ""
    return (f"- self-distillation: {sd['batch_fraction'] * 100:.0f}% of each batch from strata-tiny's own greedy "
            f"continuations ({sd['sequences']:,} sequences, {sd['tokens']:,} tokens, prompts of "
            f"{'/'.join(str(n) for n in sd['prompt_lengths'])} corpus tokens, {sd['new_tokens']} generated each"
            + (f"; {sd['copy_sequences']:,} of the prompts ask for a copy of a corpus window"
               if sd.get("copy_sequences") else "") + ")\n")


def write_cards(out, report, tcfg, dcfg):
    c = report["corpus"]
    t, d, a = report["target"], report["draft"], report["acceptance"]
    lic_rows = "\n".join(f"| {p['name']} | {p['version']} | {p['license']} | {p['files']} | {p['bytes']:,} |"
                         for p in c["packages"])
    excl = ", ".join(f"{p['name']} ({p['license']})" for p in c["excluded_packages"]) or "none"
    card = f"""# strata-tiny

A small Qwen3-architecture language model trained from scratch on Python source code, shipped with Strata as
the default model, with a small draft model for speculative decoding (`../strata-tiny-draft`). It continues
Python code; it is not an assistant, though its tokenizer and chat template are ChatML.

Made by `tools/train/train_tiny.py` in {report['total_seconds']:.0f} s on one {report['device_name']}
(torch {report['torch_version']}, transformers {report['transformers_version']}, tokenizers
{report['tokenizers_version']}), seed {report['seed']}.

## Model
{chr(10).join(arch_lines(tcfg, t['params']))}

## Tokenizer
Byte-level BPE trained with `tokenizers` on {report['tokenizer']['train_bytes'] / 1e6:.1f} MB of the training
split: {tcfg.vocab_size} tokens, NFC normalizer, the Qwen2 pre-tokenizer split then ByteLevel, special tokens
`<|endoftext|>` (0, document separator and padding), `<|im_start|>` (1), `<|im_end|>` (2, end of turn). No BOS.

## Training data
The `.py` files of the Python packages installed on the training machine (found through each package's
`*.dist-info/RECORD`) and the CPython standard library, deduplicated by content, in a fixed hash order, capped
at {c['max_bytes'] / 1e6:.0f} MB. Files go to a held-out split by the hash of their path
({c['heldout_per_mille'] / 10:.1f}%). Packages under GPL/AGPL licenses were excluded: {excl}.

- train: {c['train_files']:,} files, {c['train_bytes'] / 1e6:.1f} MB, {report['train_tokens']:,} tokens
- held-out: {c['heldout_files']:,} files, {c['heldout_bytes'] / 1e6:.2f} MB, {report['heldout_tokens']:,} tokens

| package | version | license (from its METADATA) | files | bytes |
| --- | --- | --- | ---: | ---: |
{lic_rows}

## Training
AdamW (betas 0.9/0.95, weight decay 0.1), peak LR {t['peak_lr']}, warmup then cosine decay over a wall-clock
budget, bf16 autocast, {report['args']['tokens_per_step']:,} tokens per step in windows of {report['args']['seq']}
tokens (the last {report['args']['long_frac'] * 100:.0f}% of the budget in windows of {report['args']['long_seq']}).

- steps: {t['steps']:,}; tokens seen: {t['tokens_seen']:,} ({t['tokens_seen'] / max(1, report['train_tokens']):.2f} epochs)
- training time: {t['train_seconds']:.0f} s ({t['tokens_per_second'] / 1e6:.2f}M tokens/s)
- train loss: {fmt_loss(t['train_loss'])} (on {report['args']['eval_tokens']:,} training tokens)
- held-out loss: {fmt_loss(t['heldout_loss'])}

{spec_section(a)}
## Files
`golden.json`: transformers' greedy output (48 tokens) for a few prompts, from this checkpoint loaded in float32
on the CPU; Strata's CPU backend must reproduce it token for token (tests/model/test_strata_tiny.cpp).
"""
    with open(os.path.join(out, "strata-tiny", "README.md"), "w", encoding="utf-8") as f:
        f.write(card)
    dcard = draft_card(dcfg, d, a)
    with open(os.path.join(out, "strata-tiny-draft", "README.md"), "w", encoding="utf-8") as f:
        f.write(dcard)


# --------------------------------------------------------------------------------------------- main

def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks every stage in well under a minute")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--corpus-mb", type=float, default=None)
    ap.add_argument("--tokenizer-mb", type=float, default=None, help="training text the BPE trainer sees")
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--minutes", type=float, default=None, help="target training budget")
    ap.add_argument("--draft-seconds", type=float, default=None)
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--intermediate", type=int, default=None)
    ap.add_argument("--heads", type=int, default=None)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--draft-layers", type=int, default=None)
    ap.add_argument("--draft-hidden", type=int, default=None)
    ap.add_argument("--draft-intermediate", type=int, default=None)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--draft-lr", type=float, default=None)
    ap.add_argument("--tokens-per-step", type=int, default=None)
    ap.add_argument("--distill", type=float, default=None,
                    help="weight of KL(target || draft) in the draft's loss; 0 trains the draft on the data alone")
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to dry-run the logic (with --smoke)")
    a = ap.parse_args()

    full = dict(corpus_mb=240, tokenizer_mb=40, vocab=8192, minutes=3.5, draft_seconds=40, layers=8, hidden=512,
                intermediate=1024, heads=8, kv_heads=4, draft_layers=1, draft_hidden=384, draft_intermediate=1024,
                lr=2e-3, draft_lr=3e-3, tokens_per_step=131072, seq=512, long_seq=2048, long_frac=0.1,
                max_pos=2048, warmup=150, distill=0.5, log_every=50, eval_tokens=2_000_000, acc_prompts=64, acc_new=128,
                golden_new=48)
    smoke = dict(full, corpus_mb=3, tokenizer_mb=1.5, vocab=1024, minutes=0.15, draft_seconds=4, layers=2,
                 hidden=128, intermediate=256, heads=2, kv_heads=1, draft_layers=1, draft_hidden=128,
                 draft_intermediate=256, tokens_per_step=16384, seq=256, long_seq=512, warmup=10, log_every=10,
                 eval_tokens=65536, acc_prompts=4, acc_new=32, golden_new=48)
    p = dict(smoke if a.smoke else full)
    for k in list(p):
        v = getattr(a, k, None)
        if v is not None:
            p[k] = v
    p["seed"] = a.seed
    log(f"params {p}")

    global DEVICE
    DEVICE = device = a.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("train_tiny.py needs a CUDA device")
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (dry run)"
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    out = os.path.abspath(a.out)
    tdir, ddir, work = (os.path.join(out, n) for n in ("strata-tiny", "strata-tiny-draft", "work"))
    for d in (tdir, ddir, work):
        os.makedirs(d, exist_ok=True)
    log(f"torch {torch.__version__} transformers {transformers.__version__} device {device_name}")

    # corpus
    train_texts, heldout_texts, cinfo = corpus.build_corpus(int(p["corpus_mb"] * 1e6), log=log)

    # tokenizer: on a prefix of the (already shuffled) training files
    budget, tok_texts = int(p["tokenizer_mb"] * 1e6), []
    used = 0
    for t in train_texts:
        if used >= budget:
            break
        tok_texts.append(t)
        used += len(t)
    tok_path = os.path.join(work, "tokenizer.json")
    tok = train_tokenizer(tok_texts, p["vocab"], tok_path)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    eot, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")
    if vocab > 65535:
        raise RuntimeError(f"tokenizer: vocab {vocab} does not fit the uint16 token arrays")
    check_round_trip(tok, heldout_texts[:50] + ["café naïve 日本語 🎉 \r\n\ttabs  x = 1_000 + 3.14"])
    log(f"tokenizer: vocab {vocab} trained on {used / 1e6:.1f} MB")

    # tokens
    train_np = encode_all(tok, train_texts, eot)
    heldout_np = encode_all(tok, heldout_texts, eot)
    log(f"tokens: train {len(train_np):,} ({cinfo['train_bytes'] / len(train_np):.2f} bytes/token), "
        f"held-out {len(heldout_np):,}")
    del train_texts, tok_texts
    batches = Batches(train_np, device, a.seed)

    # target
    tcfg = make_config(vocab, p["layers"], p["hidden"], p["heads"], p["kv_heads"], 64, p["intermediate"],
                       p["max_pos"], im_end, eot)
    torch.manual_seed(a.seed)
    target = new_model(tcfg, device)
    tied = target.lm_head.weight.data_ptr() == target.model.embed_tokens.weight.data_ptr()
    if not tied:
        target.tie_weights()
        tied = target.lm_head.weight.data_ptr() == target.model.embed_tokens.weight.data_ptr()
    tparams = count_params(target)
    log(f"target: {tparams / 1e6:.2f}M params, tied embeddings {tied}, attention "
        f"{getattr(target.config, '_attn_implementation', '?')}")
    if not tied:
        raise RuntimeError("target: lm_head is not tied to embed_tokens")
    tres = train_model("target", target, batches, p["minutes"] * 60, p["lr"], p["tokens_per_step"], p["seq"],
                       p["long_seq"], p["long_frac"], p["warmup"], p["log_every"])
    tres["params"] = tparams
    tres["train_loss"] = eval_loss(target, train_np, device, p["seq"], p["eval_tokens"])
    tres["heldout_loss"] = eval_loss(target, heldout_np, device, p["seq"], p["eval_tokens"])
    log(f"target: train loss {fmt_loss(tres['train_loss'])}, held-out loss {fmt_loss(tres['heldout_loss'])}")

    # draft
    # head_dim 64 like the target: hidden 384 -> 6 query heads over 2 key/value heads; 128 -> 2 over 1.
    dheads = max(1, p["draft_hidden"] // 64)
    dkv = dheads // 3 if dheads % 3 == 0 else max(1, dheads // 2)
    dcfg = make_config(vocab, p["draft_layers"], p["draft_hidden"], dheads, dkv, 64, p["draft_intermediate"],
                       p["max_pos"], im_end, eot)
    torch.manual_seed(a.seed + 1)
    draft = new_model(dcfg, device)
    dparams = count_params(draft)
    log(f"draft: {dparams / 1e6:.2f}M params, heads {dcfg.num_attention_heads}/{dcfg.num_key_value_heads}, "
        f"attention {getattr(draft.config, '_attn_implementation', '?')}")
    # The draft learns from the data and from the target's distribution (speculation only needs the two to agree).
    dres = train_model("draft", draft, batches, p["draft_seconds"], p["draft_lr"], p["tokens_per_step"], p["seq"],
                       p["long_seq"], p["long_frac"], p["warmup"], p["log_every"],
                       teacher=target if p["distill"] > 0 else None, distill_weight=p["distill"])
    dres["distill_weight"] = p["distill"]
    dres["params"] = dparams
    dres["train_loss"] = eval_loss(draft, train_np, device, p["seq"], p["eval_tokens"])
    dres["heldout_loss"] = eval_loss(draft, heldout_np, device, p["seq"], p["eval_tokens"])
    log(f"draft: train loss {fmt_loss(dres['train_loss'])}, held-out loss {fmt_loss(dres['heldout_loss'])}")

    # From here on a failure must not lose the trained models: each step records its error and the run goes on.
    errors = []

    def attempt(what, fn):
        try:
            return fn()
        except Exception as e:
            import traceback
            traceback.print_exc()
            log(f"FAILED: {what}: {e!r}")
            errors.append(f"{what}: {e!r}")
            return None

    acc = attempt("acceptance", lambda: acceptance(target, draft, heldout_np, device, p["acc_prompts"], 64,
                                                   p["acc_new"], 4, a.seed))
    log(f"acceptance: {acc}")

    # save in bf16, then everything that reads the saved files
    for m, d in ((target, tdir), (draft, ddir)):
        m.to(torch.bfloat16)
        m.config.use_cache = True
        m.save_pretrained(d)
        save_tokenizer_files(tok_path, d, im_end, eot, p["max_pos"])   # after: replaces its generation_config
    del target, draft, batches
    if device == "cuda":
        torch.cuda.empty_cache()
    golden = attempt("golden", lambda: make_golden(tdir, tok, p["golden_new"], device))

    report = {"args": p, "seed": a.seed, "device_name": device_name,
              "torch_version": torch.__version__, "transformers_version": transformers.__version__,
              "tokenizers_version": __import__("tokenizers").__version__, "corpus": cinfo,
              "tokenizer": {"vocab": vocab, "train_bytes": used}, "train_tokens": int(len(train_np)),
              "heldout_tokens": int(len(heldout_np)), "target": tres, "draft": dres, "acceptance": acc,
              "golden_min_margin": golden and min(e["min_greedy_margin"] for e in golden["prompts"]),
              "golden_gpu_agreement": golden and [e["gpu_agrees_for_tokens"] for e in golden["prompts"]]}
    report["total_seconds"] = round(time.time() - T0, 1)
    if acc is None:
        acc = report["acceptance"] = {"prompts": 0, "prompt_tokens": 0, "new_tokens": 0, "k": 4,
                                      "greedy_token_acceptance": float("nan"), "mean_accepted_per_block": float("nan"),
                                      "tokens_per_target_step": float("nan"), "blocks": 0}
    attempt("model cards", lambda: write_cards(out, report, tcfg, dcfg))
    report["errors"] = errors
    sizes = {"strata-tiny": dir_bytes(tdir), "strata-tiny-draft": dir_bytes(ddir)}
    report["sizes_bytes"] = sizes
    with open(os.path.join(out, "train_report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    log(f"sizes {sizes} total {sum(sizes.values()) / 1e6:.1f} MB")
    for d in (tdir, ddir):
        log(f"{d}: {sorted(os.listdir(d))}")
    if errors:
        log(f"done WITH ERRORS (the models are saved): {errors}")
        return 2
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
