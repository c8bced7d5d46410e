#!/usr/bin/env python3
"""Retrain strata-tiny's draft model against the shipped target, on the GPU machine, offline.

  python3 tools/train/retrain_draft.py --target models/strata-tiny --out OUTDIR [--draft-seconds 300]
      [--draft-layers 2] [--draft-hidden 384] [--draft-intermediate 1024] [--distill 0.5]
      [--self-distill-seconds 75 --self-distill-frac 0.5 --self-distill-copy-frac 0.3]
      [--init DRAFT_DIR [--grow-layers 1] --draft-lr 1e-3 --warmup 30]
      [--class-prompts tools/bench/spec_prompts.json --compare-draft models/strata-tiny-draft]

The target stays as it is (its weights, tokenizer and golden.json are what the tests pin); only the draft is
trained again, longer or wider, so speculative decoding accepts more of its tokens. Same corpus as
train_tiny.py (the .py files of the installed packages, rebuilt with the same size and split), the target's
tokenizer, the same loss ((1 - w) cross-entropy + w KL(target || draft)) and schedule, then held-out loss and
greedy acceptance against the target, as train_tiny.py measures them.

Self-distillation (--self-distill-seconds > 0): before training, the target greedy-decodes continuations of
random training-corpus windows for that long, and --self-distill-frac of every batch comes from those
sequences. Speculative decoding accepts a draft when it equals the target's greedy pick on the target's own
output, and the target's output is not corpus text (it repeats itself, for one), so the draft learns from
the text it will be asked to predict. The held-out prompts of the acceptance measure are not among them.

--self-distill-copy-frac F: that share of the continuations' prompts ask for a copy (a corpus window, a
separator, the window's first tokens), so the draft also learns what the target does when it repeats a span.
--class-prompts: acceptance on `strata bench spec`'s prompt classes too, for the new draft and each
--compare-draft, into retrain_report.json's class_acceptance.

--init DRAFT_DIR continues training a draft (its shape and weights, e.g. the shipped models/strata-tiny-draft)
instead of starting from random weights; the shape options are then ignored. --grow-layers N adds N layers
after the given draft's, each starting with its attention and MLP output projections at zero, so the grown
draft begins as the given one (same logits) and training decides what the new layers add (a one-layer draft
cannot copy a span: that takes two attention layers in sequence).

Writes OUTDIR/strata-tiny-draft (safetensors in bf16, tokenizer files, README.md), OUTDIR/spec_section.md
(strata-tiny's README section on its draft, to paste over the old one) and OUTDIR/retrain_report.json.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_tiny as tt  # noqa: E402  (torch, transformers, tokenizers, corpus)

torch = tt.torch
np = tt.np


def training_options(argv, paths=("--target", "--out")):
    """The command line without the options that name this machine's paths, for the draft card."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in paths:
            skip = True
        elif not arg.startswith(tuple(p + "=" for p in paths)):
            out.append(arg)
    return out


@torch.no_grad()
def greedy_generate(model, ids, n_new):
    """Greedy continuation with the model's KV cache, under bf16 autocast as the target trains and is
    measured. ids: [B, P]. Returns [B, P + n_new]."""
    out_ids = [ids]
    past = None
    step = ids
    for _ in range(n_new):
        with torch.autocast(device_type=tt.DEVICE, dtype=torch.bfloat16):
            # Only the last position's logits: a 2,048-sequence prompt's would take gigabytes.
            out = model(input_ids=step, past_key_values=past, use_cache=True, logits_to_keep=1)
        past = out.past_key_values
        step = out.logits[:, -1, :].float().argmax(dim=-1, keepdim=True)
        out_ids.append(step)
    return torch.cat(out_ids, dim=1)


def load_model(path, dtype, device, **kw):
    """A saved model in `dtype` on the device (transformers v5 names the argument dtype, v4 torch_dtype)."""
    try:
        m = tt.transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kw)
    except TypeError:
        m = tt.transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, **kw)
    return m.to(device)


def load_draft(path, device):
    """A saved draft model in fp32 on the device, with PyTorch's fused attention as tt.new_model asks."""
    return load_model(path, torch.float32, device, attn_implementation="sdpa")


def grow_draft(draft, n_new, device, im_end, eot):
    """`draft` with n_new layers appended: the same config otherwise, the old weights copied, and each new
    layer's output projections (attention's o_proj, the MLP's down_proj) zero, so that every new layer adds
    nothing to the residual stream at first and the grown model's logits are the old one's."""
    c = draft.config
    old = c.num_hidden_layers
    cfg = tt.make_config(c.vocab_size, old + n_new, c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
                         c.head_dim, c.intermediate_size, c.max_position_embeddings, im_end, eot)
    grown = tt.new_model(cfg, device)
    missing, unexpected = grown.load_state_dict(draft.state_dict(), strict=False)
    new_prefixes = tuple(f"model.layers.{i}." for i in range(old, old + n_new))
    if unexpected or any(not k.startswith(new_prefixes) for k in missing):
        raise SystemExit(f"grow_draft: weights do not line up (missing {missing}, unexpected {unexpected})")
    with torch.no_grad():
        for i in range(old, old + n_new):
            layer = grown.model.layers[i]
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    grown.tie_weights()
    probe = torch.randint(0, c.vocab_size, (2, 64), device=device)
    with torch.no_grad():
        diff = (grown(input_ids=probe).logits - draft(input_ids=probe).logits).abs().max().item()
    tt.log(f"grown draft: {old} + {n_new} layer(s); logits against the given draft's differ by at most {diff:.2e}")
    if diff > 1e-3:
        raise SystemExit(f"grow_draft: the grown draft does not start as the given one ({diff})")
    return grown


# What copy prompts put between a window and its first tokens again: the ways a user asks for code back.
COPY_SEPARATORS = ("\n\n\n# The code above, again:\n\n", "\n\n# Here it is once more.\n\n",
                   "\n\n\n# A copy of the code above:\n\n", "\n\n# Same as above, cleaned up:\n\n")


def copy_prompts(train_np, rng, batch, plen, sep_ids, head):
    """batch prompts that invite a copy: a training window of plen tokens, a separator (its token ids), then
    the window's first `head` tokens, so the target's continuation is (mostly) the window again."""
    starts = rng.integers(0, len(train_np) - plen - 1, size=batch)
    sep = np.asarray(sep_ids, dtype=np.int64)
    return np.stack([np.concatenate([w, sep, w[:head]])
                     for w in (train_np[st:st + plen].astype(np.int64) for st in starts)])


def self_distill_tokens(target, train_np, device, seconds, batch, n_new, prompt_lens, seed, eot,
                        copy_frac=0.0, copy_seps=(), copy_lens=(128, 256, 384), copy_head=8):
    """The target's greedy continuations of random training windows (prompt lengths cycling through
    prompt_lens), each sequence followed by <|endoftext|>, for `seconds` of generation: one uint16 array.
    A share copy_frac of the batches (interleaved) prompts for a copy instead (copy_prompts: a window of
    copy_lens tokens, one of copy_seps' token lists, the window's first copy_head tokens)."""
    rng = np.random.default_rng(seed)
    limit = len(train_np) - max(prompt_lens) - 1
    parts, n, n_copy, t0 = [], 0, 0, time.time()
    while time.time() - t0 < seconds:
        if copy_frac > 0 and (n_copy + 1) <= copy_frac * (n + 1):
            plen = int(copy_lens[n_copy % len(copy_lens)])
            sep = copy_seps[n_copy % len(copy_seps)]
            prompts = copy_prompts(train_np, rng, batch, plen, sep, copy_head)
            n_copy += 1
        else:
            plen = int(prompt_lens[(n - n_copy) % len(prompt_lens)])
            starts = rng.integers(0, limit, size=batch)
            prompts = np.stack([train_np[st:st + plen].astype(np.int64) for st in starts])
        seq = greedy_generate(target, torch.from_numpy(prompts).to(device), n_new).cpu().numpy()
        seq = np.concatenate([seq, np.full((seq.shape[0], 1), eot, dtype=seq.dtype)], axis=1)
        parts.append(seq.astype(np.uint16).reshape(-1))
        n += 1
    tokens = np.concatenate(parts)
    tt.log(f"self-distillation: {n} batches of {batch} sequences ({n_copy} of copy prompts), {len(tokens):,} tokens "
           f"in {time.time() - t0:.0f}s")
    return tokens, n * batch, n_copy * batch


@torch.no_grad()
def class_acceptance(target, drafts, tok, path, device, n_new, k):
    """Each draft's acceptance on `strata bench spec`'s prompts (tools/bench/spec_prompts.json), class by
    class: the target greedy-decodes n_new tokens after each prompt (one at a time, as the bench runs them);
    at each generated position, does the draft's greedy token given the target's prefix equal the target's
    (tt.draft_matches), and how many of a k-token block does speculative decoding keep
    (tt.accepted_per_block). drafts: {name: model}. Returns {name: {class: {...}}}."""
    with open(path, encoding="utf-8") as f:
        classes = json.load(f)["classes"]
    out = {name: {} for name in drafts}
    for c in classes:
        seqs = []
        for text in c["prompts"]:
            ids = torch.tensor([tok.encode(text, add_special_tokens=False).ids], device=device)
            seq, _ = tt.greedy_continue(target, ids, n_new, autocast=True)
            seqs.append((ids.shape[1], seq))
        for name, draft in drafts.items():
            matches = [tt.draft_matches(draft, seq, plen)[0] for plen, seq in seqs]
            acc = tt.accepted_per_block(matches, k)
            out[name][c["name"]] = {"prompts": len(seqs), "new_tokens": n_new, "k": k,
                                    "greedy_token_acceptance": round(float(np.mean(np.concatenate(matches))), 4),
                                    "mean_accepted_per_block": round(float(np.mean(acc)), 3)}
    tt.log(f"acceptance on the bench's prompt classes: {out}")
    return out


class MixedBatches:
    """Each batch: a fraction `frac` of its windows from `other`, the rest from `main`."""

    def __init__(self, main, other, frac):
        self.main, self.other, self.frac = main, other, frac

    def get(self, batch, seq):
        nb = min(batch - 1, max(1, int(round(batch * self.frac))))
        x1, y1 = self.main.get(batch - nb, seq)
        x2, y2 = self.other.get(nb, seq)
        return torch.cat([x1, x2]), torch.cat([y1, y2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True, help="the strata-tiny model directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--corpus-mb", type=float, default=240, help="as train_tiny.py's full run")
    ap.add_argument("--draft-seconds", type=float, default=300)
    ap.add_argument("--draft-layers", type=int, default=1)
    ap.add_argument("--draft-hidden", type=int, default=384)
    ap.add_argument("--draft-intermediate", type=int, default=1024)
    ap.add_argument("--draft-lr", type=float, default=3e-3)
    ap.add_argument("--distill", type=float, default=0.5)
    ap.add_argument("--init", default=None, help="a draft model directory to continue training from")
    ap.add_argument("--grow-layers", type=int, default=0,
                    help="with --init: layers added after the draft's, starting as no change (grow_draft)")
    ap.add_argument("--warmup", type=int, default=150, help="warmup steps of the learning rate")
    ap.add_argument("--tokens-per-step", type=int, default=131072)
    ap.add_argument("--self-distill-seconds", type=float, default=0.0,
                    help="seconds of target greedy generation to train on (0: corpus only)")
    ap.add_argument("--self-distill-frac", type=float, default=0.5, help="share of each batch from it")
    ap.add_argument("--self-distill-new", type=int, default=256, help="tokens generated per sequence")
    ap.add_argument("--self-distill-batch", type=int, default=2048, help="sequences generated at once")
    ap.add_argument("--self-distill-seed", type=int, default=None,
                    help="seed of the continuations' prompts (default --seed + 7; another one gives a continued "
                         "training new sequences while --seed keeps the acceptance measure's prompts)")
    ap.add_argument("--self-distill-copy-frac", type=float, default=0.0,
                    help="share of the continuations whose prompt asks for a copy of a window (copy_prompts)")
    ap.add_argument("--class-prompts", default=None,
                    help="tools/bench/spec_prompts.json: also measure acceptance on its prompt classes")
    ap.add_argument("--compare-draft", action="append", default=[],
                    help="a draft model directory measured beside the new one on --class-prompts (repeatable)")
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to dry-run the logic (with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="train_tiny.py's smoke sizes for the loops")
    a = ap.parse_args()
    p = dict(seq=512, long_seq=2048, long_frac=0.1, warmup=a.warmup, log_every=50, eval_tokens=2_000_000,
             acc_prompts=64, acc_new=128)
    if a.smoke:
        p.update(seq=256, long_seq=512, warmup=10, log_every=10, eval_tokens=65536, acc_prompts=4, acc_new=32)
    tt.log(f"args {vars(a)} params {p}")

    tt.DEVICE = device = a.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("retrain_draft.py needs a CUDA device")
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    out = os.path.abspath(a.out)
    ddir = os.path.join(out, "strata-tiny-draft")
    os.makedirs(ddir, exist_ok=True)

    # The target as shipped (bf16 weights; the teacher runs under bf16 autocast as in train_tiny.py).
    target = load_model(a.target, torch.bfloat16, device)
    target.eval()
    tok_path = os.path.join(a.target, "tokenizer.json")
    tok = tt.Tokenizer.from_file(tok_path)
    eot, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    if vocab != target.config.vocab_size:
        raise SystemExit(f"tokenizer vocab {vocab} != target vocab_size {target.config.vocab_size}")
    max_pos = target.config.max_position_embeddings

    train_texts, heldout_texts, cinfo = tt.corpus.build_corpus(int(a.corpus_mb * 1e6), log=tt.log)
    train_np = tt.encode_all(tok, train_texts, eot)
    heldout_np = tt.encode_all(tok, heldout_texts, eot)
    tt.log(f"tokens: train {len(train_np):,}, held-out {len(heldout_np):,}")
    del train_texts
    batches = tt.Batches(train_np, device, a.seed)
    sd_info = None
    if a.self_distill_seconds > 0:
        if not 0.0 < a.self_distill_frac < 1.0:
            raise SystemExit("--self-distill-frac must be within (0, 1)")
        plens = [16, 32, 64, 128, 256] if not a.smoke else [8, 16]
        n_new = a.self_distill_new if not a.smoke else 16
        if not 0.0 <= a.self_distill_copy_frac <= 1.0:
            raise SystemExit("--self-distill-copy-frac must be within [0, 1]")
        seps = [tok.encode(t, add_special_tokens=False).ids for t in COPY_SEPARATORS]
        sd_np, sd_seqs, sd_copy = self_distill_tokens(
            target, train_np, device, a.self_distill_seconds, a.self_distill_batch if not a.smoke else 8, n_new,
            plens, a.seed + 7 if a.self_distill_seed is None else a.self_distill_seed, eot,
            a.self_distill_copy_frac, seps, (128, 256, 384) if not a.smoke else (16,))
        sd_info = {"seconds": a.self_distill_seconds, "sequences": sd_seqs, "tokens": int(len(sd_np)),
                   "prompt_lengths": plens, "new_tokens": n_new, "batch_fraction": a.self_distill_frac,
                   "copy_sequences": sd_copy}
        batches = MixedBatches(batches, tt.Batches(sd_np, device, a.seed + 8), a.self_distill_frac)

    torch.manual_seed(a.seed + 1)
    if a.grow_layers and not a.init:
        raise SystemExit("--grow-layers needs --init (the draft to grow)")
    if a.init:
        # Continued training: the given draft's shape and weights, in fp32 as a fresh model trains.
        draft = load_draft(a.init, device)
        dcfg = draft.config
        if dcfg.vocab_size != vocab:
            raise SystemExit(f"--init draft vocab {dcfg.vocab_size} != target vocab {vocab}")
        dcfg.use_cache = False
        if a.grow_layers > 0:
            draft = grow_draft(draft, a.grow_layers, device, im_end, eot)
            dcfg = draft.config
        tt.log(f"continuing from {a.init}: {dcfg.num_hidden_layers} layer(s) ({a.grow_layers} new), "
               f"hidden {dcfg.hidden_size}")
    else:
        # The draft: head_dim 64 like the target, as train_tiny.py shapes it.
        dheads = max(1, a.draft_hidden // 64)
        dkv = dheads // 3 if dheads % 3 == 0 else max(1, dheads // 2)
        dcfg = tt.make_config(vocab, a.draft_layers, a.draft_hidden, dheads, dkv, 64, a.draft_intermediate,
                              max_pos, im_end, eot)
        draft = tt.new_model(dcfg, device)
    dres = tt.train_model("draft", draft, batches, a.draft_seconds, a.draft_lr, a.tokens_per_step, p["seq"],
                          p["long_seq"], p["long_frac"], p["warmup"], p["log_every"], teacher=target,
                          distill_weight=a.distill)
    dres["distill_weight"] = a.distill
    if a.init:
        dres["continued_from"] = os.path.basename(os.path.normpath(a.init))
        dres["grown_layers"] = a.grow_layers
    dres["self_distillation"] = sd_info
    dres["made_by"] = "tools/train/retrain_draft.py " + " ".join(training_options(sys.argv[1:]))
    dres["params"] = tt.count_params(draft)
    dres["train_loss"] = tt.eval_loss(draft, train_np, device, p["seq"], p["eval_tokens"])
    dres["heldout_loss"] = tt.eval_loss(draft, heldout_np, device, p["seq"], p["eval_tokens"])
    tt.log(f"draft: train loss {tt.fmt_loss(dres['train_loss'])}, held-out {tt.fmt_loss(dres['heldout_loss'])}")
    acc = tt.acceptance(target, draft, heldout_np, device, p["acc_prompts"], 64, p["acc_new"], 4, a.seed)
    tt.log(f"acceptance: {acc}")
    class_acc = None
    if a.class_prompts:
        drafts = {"new": draft}
        for d in a.compare_draft:
            drafts[os.path.basename(os.path.normpath(d))] = load_draft(d, device).eval()
        class_acc = class_acceptance(target, drafts, tok, a.class_prompts, device, p["acc_new"], 4)

    draft.to(torch.bfloat16)
    draft.config.use_cache = True
    draft.save_pretrained(ddir)
    tt.save_tokenizer_files(tok_path, ddir, im_end, eot, max_pos)
    with open(os.path.join(ddir, "README.md"), "w", encoding="utf-8") as f:
        f.write(tt.draft_card(dcfg, dres, acc))
    with open(os.path.join(out, "spec_section.md"), "w", encoding="utf-8") as f:
        f.write(tt.spec_section(acc))
    report = {"args": vars(a), "params": p, "corpus": cinfo, "draft": dres, "acceptance": acc,
              "class_acceptance": class_acc,
              "total_seconds": round(time.time() - tt.T0, 1)}
    with open(os.path.join(out, "retrain_report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    tt.log(f"done: {sorted(os.listdir(ddir))}")


if __name__ == "__main__":
    main()
