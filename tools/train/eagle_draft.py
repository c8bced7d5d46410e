#!/usr/bin/env python3
"""Would a draft that reads strata-tiny's hidden state reach issue 6's 2x? Train one and measure, offline.

  python3 tools/train/eagle_draft.py --target models/strata-tiny --out OUTDIR [--seconds 300] [--levels 4]
      [--intermediate 1024] [--self-distill-seconds 90 --self-distill-frac 0.7] [--shipped-draft DIR]

strata-tiny-draft predicts the next token from tokens alone and accepts ~72 % of positions; docs/PERFORMANCE.md
("What 2x would take") says 2x at the measured costs needs ~86 %. This script answers, before any backend
work, whether a drafter fed with the target's own features gets there (the EAGLE family's idea):

- A step's input is fc([embedding(token); feature]) where feature is the vector the LM head reads (the
  final-normed hidden state): the target's at the last verified position, the draft's own after that.
- One decoder layer (RMSNorm, attention with q/k norms and RoPE, SwiGLU) then its own final norm gives the
  next feature; the target's (tied) LM head turns it into the draft token. So a draft step costs about what
  a step of the one-layer draft costs now, plus one small matrix.
- Trained on "levels": level 1 reads the target's features everywhere (teacher forcing); level j >= 2 feeds
  each position the draft's own feature and argmax token of level j - 1, attending to the target-fed entries
  before it and its own chain, exactly what drafting k tokens in a row does. Loss per level: KL(target ||
  draft) of the next-token distribution plus a smooth-L1 pull of the feature toward the target's.

Measured as the engine would run it: on held-out prompts the target greedy-decodes; a round starts at the
last verified position, drafts k tokens through the levels and accepts the run of exact matches, then the
target adds its own token. The same rounds are counted for the shipped draft (--shipped-draft) on the same
sequences, so the two mean accepted lengths compare directly.

Writes OUTDIR/eagle_report.json (both acceptances, the training record) and OUTDIR/strata-tiny-feature-draft/
(save_draft: config.json and model.safetensors in bf16, a Qwen3 layer's tensor names, for the engine's loader
to come; the embedding and LM head are the target's and not stored).
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_tiny as tt  # noqa: E402  (torch, transformers, tokenizers, corpus)
import retrain_draft as rd  # noqa: E402  (self-distillation, mixed batches, draft loading)
from feature_draft_model import EagleDraft, load_draft_state, save_draft, sequential_chain  # noqa: E402

torch = tt.torch
np = tt.np
F = tt.F
nn = torch.nn


def levels_forward(draft, emb_w, head_w, tokens, feats, n_levels):
    """tokens [B, L], feats [B, L, H] (the target's). Entry i (0 <= i < L - 1) starts a chain after position i:
    level 1 reads (token i + 1, target feature i) at position i and attends to entries 0..i of level 1;
    level j reads level j - 1's feature and argmax token at position i + j - 1 and attends to entries 0..i of
    level 1 and its own chain's levels 2..j. Returns [(feature [B, N, H], logits [B, N, V])] per level, where
    level j's entry i predicts token i + j + 1 and target feature i + j."""
    B, L = tokens.shape
    N = L - 1
    dev = tokens.device
    scale = 1.0 / math.sqrt(draft.head_dim)
    x = draft.fc(torch.cat([emb_w[tokens[:, 1:]], feats[:, :-1]], -1))
    if not draft.attention:
        out = []
        for j in range(n_levels):
            f = draft.finish(x, None)
            logits = torch.matmul(f, head_w.t())
            out.append((f, logits))
            x = draft.fc(torch.cat([emb_w[logits.argmax(-1).detach()], f], -1))
        return out
    q, k1, v1 = draft.project(x, torch.arange(N, device=dev))
    causal = torch.ones(N, N, dtype=torch.bool, device=dev).tril()
    chain_k, chain_v, out = [], [], []
    for j in range(1, n_levels + 1):
        s = torch.matmul(q, k1.transpose(-1, -2)).float() * scale
        s = s.masked_fill(~causal, float("-inf"))
        if chain_k:
            sc = torch.stack([(q * kc).sum(-1) for kc in chain_k], -1).float() * scale
            s = torch.cat([s, sc], -1)
        p = torch.softmax(s, -1).to(v1.dtype)
        att = torch.matmul(p[..., :N], v1)
        for m, vc in enumerate(chain_v):
            att = att + p[..., N + m, None] * vc
        f = draft.finish(x, att)
        logits = torch.matmul(f, head_w.t())
        out.append((f, logits))
        if j == n_levels:
            break
        d = logits.argmax(-1).detach()
        x = draft.fc(torch.cat([emb_w[d], f], -1))
        q, kc, vc = draft.project(x, torch.arange(N, device=dev) + j)
        chain_k.append(kc)
        chain_v.append(vc)
    return out


@torch.no_grad()
def check_levels(draft, emb_w, head_w, tokens, feats, k):
    """levels_forward (all rounds at once, as trained and measured) against sequential_chain at a few starts,
    in fp32 without TF32: the same draft tokens and features, or the acceptance this script reports would be
    wrong. A token that differs by a near-tie (then the chain's later steps differ too) is counted, not failed."""
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        levels = levels_forward(draft, emb_w, head_w, tokens, feats, k)
        worst, ties, compared = 0.0, 0, 0
        for s in sorted({0, tokens.shape[1] // 3, tokens.shape[1] - 2 - k}):
            toks, fs, _ = sequential_chain(draft, emb_w, head_w, tokens, feats, s, k)
            for b in range(tokens.shape[0]):
                for j in range(k):
                    f, logits = levels[j]
                    worst = max(worst, float((f[b, s] - fs[b, j]).abs().max()))
                    compared += 1
                    if int(logits[b, s].argmax()) != int(toks[b, j]):
                        top = torch.topk(logits[b, s].float(), 2).values
                        if float(top[0] - top[1]) > 1e-3:
                            raise SystemExit(f"check_levels: start {s} level {j + 1}: tokens differ")
                        ties += 1
                        break
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    if worst > 1e-3:
        raise SystemExit(f"check_levels: features differ by {worst}")
    tt.log(f"check_levels: levels_forward equals step-by-step drafting on {compared} draft steps (features "
           f"within {worst:.1e}, {ties} near-tie tokens)")


@torch.no_grad()
def target_features(target, tokens):
    """The target's final-normed hidden states [B, L, H] (what its LM head reads) and its logits, in fp32."""
    with torch.autocast(device_type=tt.DEVICE, dtype=torch.bfloat16):
        h = target.model(input_ids=tokens).last_hidden_state
    h = h.float()
    return h, torch.matmul(h, target.lm_head.weight.float().t())


def train(draft, target, emb_w, head_w, batches, a, p):
    opt = tt.make_optimizer(draft, a.lr, 0.0)
    w_level = [a.level_decay ** j for j in range(a.levels)]
    step, tokens_seen, t0, curve = 0, 0, time.time(), []
    draft.train()
    while time.time() - t0 < a.seconds:
        frac = (time.time() - t0) / a.seconds
        lr = a.lr * min(1.0, (step + 1) / p["warmup"]) * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        x, _ = batches.get(p["batch"], p["seq"])
        feats, t_logits = target_features(target, x)
        t_logp = F.log_softmax(t_logits, -1)
        with torch.autocast(device_type=tt.DEVICE, dtype=torch.bfloat16):
            levels = levels_forward(draft, emb_w, head_w, x, feats, a.levels)
        N = x.shape[1] - 1
        loss, kls = 0.0, []
        for j, (f, logits) in enumerate(levels, start=1):
            n = N - j + 1                      # entries whose target position i + j is inside the window
            lp = F.log_softmax(logits[:, :n].float(), -1)
            kl = F.kl_div(lp.reshape(-1, lp.shape[-1]), t_logp[:, j:j + n].reshape(-1, lp.shape[-1]),
                          log_target=True, reduction="batchmean")
            fl = F.smooth_l1_loss(f[:, :n].float(), feats[:, j:j + n])
            loss = loss + w_level[j - 1] * (kl + a.feature_weight * fl)
            kls.append(kl)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        step += 1
        tokens_seen += x.numel()
        if step % p["log_every"] == 0 or step == 1:
            now = time.time()
            kv = [round(k.item(), 4) for k in kls]
            curve.append((step, kv))
            tt.log(f"eagle: step {step} kl per level {kv} lr {lr:.2e} {tokens_seen / (now - t0) / 1e6:.2f}M tok/s "
                   f"elapsed {now - t0:.0f}/{a.seconds:.0f}s")
            if not all(math.isfinite(v) for v in kv):
                raise RuntimeError(f"eagle: loss is not finite at step {step}")
    draft.eval()
    return {"steps": step, "tokens_seen": tokens_seen, "train_seconds": round(time.time() - t0, 1),
            "kl_curve": curve, "last_kl_per_level": curve[-1][1] if curve else None}


def rounds(match, start, k):
    """match[b][j - 1][s]: the j-th draft of a round that starts after position s equals the target's token
    s + 1 + j. Rounds start at `start` (the prompt's last position) and advance by accepted + 1. Returns the
    accepted length of every round."""
    out = []
    B, _, L = match.shape
    for b in range(B):
        s = start
        while s + 2 <= L:                      # the round's bonus token s + 2 lies inside the sequence
            n = 0
            while n < k and s + 2 + n <= L and match[b, n, s]:
                n += 1
            out.append(n)
            s += n + 1
    return out


def summarize(acc, per_level):
    a = np.asarray(acc, dtype=np.float64)
    return {"rounds": int(len(a)), "mean_accepted": round(float(a.mean()), 3),
            "tokens_per_round": round(float(a.mean()) + 1.0, 3),
            "accepted_histogram": [int((a == n).sum()) for n in range(int(a.max()) + 1)] if len(a) else [],
            "level_match_rate": per_level}


@torch.no_grad()
def measure(target, draft, emb_w, head_w, shipped, heldout_np, device, a, p):
    """Both drafters' round-by-round acceptance on the target's greedy continuations of held-out prompts."""
    rng = np.random.default_rng(a.seed)
    P, n_new, k = p["acc_prompt"], p["acc_new"], a.levels
    starts = rng.integers(0, len(heldout_np) - P - 1, size=p["acc_prompts"])
    ids = torch.from_numpy(np.stack([heldout_np[s:s + P].astype(np.int64) for s in starts])).to(device)
    seq, _ = tt.greedy_continue(target, ids, n_new, autocast=True)
    L = seq.shape[1]
    feats, _ = target_features(target, seq)
    with torch.autocast(device_type=tt.DEVICE, dtype=torch.bfloat16):
        levels = levels_forward(draft, emb_w, head_w, seq, feats, k)
    # match[b, j - 1, s] for s < L - 1: level j's entry s against token s + 1 + j.
    match = torch.zeros(seq.shape[0], k, L - 1, dtype=torch.bool, device=device)
    for j, (_, logits) in enumerate(levels, start=1):
        n = L - 1 - j
        match[:, j - 1, :n] = logits[:, :n].argmax(-1) == seq[:, j + 1:j + 1 + n]
    # Each level's match rate over the rounds' possible starts (the prompt's last position on).
    eagle_levels = [round(float(match[:, j - 1, P - 1:L - 1 - j].float().mean()), 4) for j in range(1, k + 1)]
    result = {"prompts": int(seq.shape[0]), "prompt_tokens": P, "new_tokens": n_new, "k": k,
              "eagle": summarize(rounds(match.cpu().numpy(), P - 1, k), eagle_levels)}
    if shipped is not None:
        with torch.autocast(device_type=tt.DEVICE, dtype=torch.bfloat16):
            dl = shipped(input_ids=seq, use_cache=False).logits
        tf = dl[:, :-1].argmax(-1) == seq[:, 1:]            # tf[:, i]: the token draft's guess of token i + 1
        sm = torch.zeros_like(match)
        for j in range(1, k + 1):                             # draft j of a round after s guesses token s + 1 + j
            n = L - 1 - j
            sm[:, j - 1, :n] = tf[:, j:j + n]
        result["shipped"] = summarize(rounds(sm.cpu().numpy(), P - 1, k),
                                      [round(float(tf[:, P:].float().mean()), 4)])
    return result


def write_card(d, report, draft, device):
    """The draft's README.md: what it is, how it was trained, what it accepts."""
    tr, acc, sd = report["training"], report["acceptance"], report["self_distillation"]
    e = acc["eagle"]
    gpu = torch.cuda.get_device_name(0) if str(device).startswith("cuda") else "CPU"
    lines = [
        "# strata-tiny-feature-draft", "",
        "A feature-reading draft for speculative decoding with `../strata-tiny` (`--draft-model` this directory). A",
        "step reads fc([embedding(token); feature]), where the feature is strata-tiny's final-normed hidden state",
        "(what its LM head reads) at the position before the token, or after the first step the draft's own.",
        f"One Qwen3 decoder layer ({draft.heads} heads, {draft.kv_heads} KV heads, MLP {draft.down.in_features}) and",
        "its own final norm give the next feature, and strata-tiny's tied LM head the draft token. The embedding",
        "and LM head are strata-tiny's and not stored here. See strata-tiny's README.md for the corpus and its",
        "licenses.", "",
        f"- parameters of its own: {report['draft_parameters']:,} (bf16)",
        f"- trained {tr['train_seconds']:.0f} s on one {gpu}: {tr['steps']:,} steps, {tr['tokens_seen']:,} tokens, "
        f"{acc['k']} chained levels a step (KL to strata-tiny's next-token distribution plus a smooth-L1 pull of the "
        "feature toward strata-tiny's)",
    ]
    if sd:
        lines.append(f"- self-distillation: {sd['batch_fraction'] * 100:.0f}% of each batch from strata-tiny's own "
                     f"greedy continuations ({sd['sequences']:,} sequences, {sd['tokens']:,} tokens)")
    lines.append(f"- acceptance on strata-tiny's greedy continuations of {acc['prompts']} held-out prompts "
                 f"({acc['new_tokens']} tokens each), k = {acc['k']}: mean accepted {e['mean_accepted']:.2f} "
                 f"({e['tokens_per_round']:.2f} tokens a round), level match rates "
                 + " / ".join(f"{v:.3f}" for v in e["level_match_rate"]))
    if "shipped" in acc:
        lines.append(f"  (the token-only strata-tiny-draft on the same rounds: mean accepted "
                     f"{acc['shipped']['mean_accepted']:.2f})")
    lines.append("- made by `tools/train/eagle_draft.py " + " ".join(
        rd.training_options(sys.argv[1:], ("--target", "--out", "--shipped-draft"))) + "`")
    with open(os.path.join(d, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shipped-draft", default=None, help="the token-only draft to compare with")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--corpus-mb", type=float, default=240)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--levels", type=int, default=4, help="draft steps a round (k), trained and measured")
    ap.add_argument("--level-decay", type=float, default=0.8)
    ap.add_argument("--feature-weight", type=float, default=0.5)
    ap.add_argument("--intermediate", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--no-attention", action="store_true", help="fc and the MLP only: a cheaper step")
    ap.add_argument("--init", default=None, help="a saved feature draft's directory to go on training from")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--self-distill-seconds", type=float, default=90)
    ap.add_argument("--self-distill-frac", type=float, default=0.7)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    p = dict(batch=a.batch, seq=a.seq, warmup=100, log_every=100, acc_prompts=64, acc_prompt=64, acc_new=128)
    if a.smoke:
        p.update(batch=4, seq=64, warmup=5, log_every=5, acc_prompts=4, acc_new=24)
    tt.log(f"args {vars(a)} params {p}")
    tt.DEVICE = device = a.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("eagle_draft.py needs a CUDA device")
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    os.makedirs(a.out, exist_ok=True)

    target = rd.load_model(a.target, torch.bfloat16, device).eval()
    for q in target.parameters():
        q.requires_grad_(False)
    cfg = target.config
    emb_w = target.get_input_embeddings().weight.detach().to(torch.bfloat16)
    head_w = target.lm_head.weight.detach().to(torch.bfloat16)
    tok = tt.Tokenizer.from_file(os.path.join(a.target, "tokenizer.json"))
    eot = tok.token_to_id("<|endoftext|>")

    train_texts, heldout_texts, cinfo = tt.corpus.build_corpus(int(a.corpus_mb * 1e6), log=tt.log)
    train_np = tt.encode_all(tok, train_texts, eot)
    heldout_np = tt.encode_all(tok, heldout_texts, eot)
    del train_texts
    batches = tt.Batches(train_np, device, a.seed)
    sd = None
    if a.self_distill_seconds > 0:
        plens = [16, 32, 64, 128, 256] if not a.smoke else [8, 16]
        sd_np, sd_seqs, _ = rd.self_distill_tokens(target, train_np, device, a.self_distill_seconds,
                                                2048 if not a.smoke else 8, 256 if not a.smoke else 16, plens,
                                                a.seed + 7, eot)
        sd = {"seconds": a.self_distill_seconds, "sequences": sd_seqs, "tokens": int(len(sd_np)),
              "batch_fraction": a.self_distill_frac}
        batches = rd.MixedBatches(batches, tt.Batches(sd_np, device, a.seed + 8), a.self_distill_frac)

    torch.manual_seed(a.seed + 1)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    theta = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
    draft = EagleDraft(cfg.hidden_size, a.heads, a.kv_heads, head_dim, a.intermediate, theta,
                       cfg.rms_norm_eps, attention=not a.no_attention).to(device)
    if a.init:
        load_draft_state(draft, a.init)
        tt.log(f"eagle draft: starting from {a.init}")
    n_params = sum(q.numel() for q in draft.parameters())
    tt.log(f"eagle draft: {n_params:,} parameters (plus the target's embedding and LM head)")
    # Before training (so a slip costs seconds, not the run): the parallel levels against step-by-step
    # drafting in fp32, and the measure once (the shipped draft's figure; the fresh draft accepts ~nothing).
    xs, _ = batches.get(2, 48)
    fx, _ = target_features(target, xs)
    check_levels(draft, emb_w.float(), head_w.float(), xs, fx, a.levels)
    shipped = rd.load_draft(a.shipped_draft, device).eval() if a.shipped_draft else None
    acc0 = measure(target, draft, emb_w, head_w, shipped, heldout_np, device, a, p)
    tt.log(f"acceptance before training: {json.dumps(acc0)}")
    tr = train(draft, target, emb_w, head_w, batches, a, p)
    check_levels(draft, emb_w.float(), head_w.float(), xs, fx, a.levels)
    acc = measure(target, draft, emb_w, head_w, shipped, heldout_np, device, a, p)
    tt.log(f"acceptance: {json.dumps(acc)}")

    ddir = os.path.join(a.out, "strata-tiny-feature-draft")
    save_draft(draft, cfg, a.levels, "tools/train/eagle_draft.py " + " ".join(
        rd.training_options(sys.argv[1:], ("--target", "--out", "--shipped-draft"))), ddir)
    report = {"args": vars(a), "params": p, "draft_parameters": n_params, "corpus": cinfo,
              "self_distillation": sd, "training": tr, "acceptance": acc,
              "total_seconds": round(time.time() - tt.T0, 1)}
    write_card(ddir, report, draft, device)
    with open(os.path.join(a.out, "eagle_report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    tt.log("done")


if __name__ == "__main__":
    main()
