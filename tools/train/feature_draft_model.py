"""The feature draft's model, in torch alone: what tools/train/eagle_draft.py trains and what the engine runs
(ModelConfig::feature_input), its step-by-step drafting, and its save format. Shared by eagle_draft.py and the
fixture script (tools/fixtures/make_feature_draft_fixture.py), which needs neither transformers nor a GPU."""
import json
import math
import os

import torch
import torch.nn.functional as F

nn = torch.nn


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight.to(x.dtype)


def rope(x, pos, theta):
    """x [B, heads, N, d], pos [N]: the rotate-half RoPE transformers' Qwen3 uses."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos.float()[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class EagleDraft(nn.Module):
    def __init__(self, feat, heads, kv_heads, head_dim, inter, theta, eps, attention=True):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.theta = heads, kv_heads, head_dim, theta
        self.attention = attention   # False: the step is fc then the MLP alone (no KV, half the kernels)
        self.fc = nn.Linear(2 * feat, feat, bias=False)
        if attention:
            self.in_norm = RMSNorm(feat, eps)
            self.q = nn.Linear(feat, heads * head_dim, bias=False)
            self.k = nn.Linear(feat, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(feat, kv_heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, feat, bias=False)
            self.q_norm = RMSNorm(head_dim, eps)
            self.k_norm = RMSNorm(head_dim, eps)
        self.post_norm = RMSNorm(feat, eps)
        self.gate = nn.Linear(feat, inter, bias=False)
        self.up = nn.Linear(feat, inter, bias=False)
        self.down = nn.Linear(inter, feat, bias=False)
        self.out_norm = RMSNorm(feat, eps)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)

    def project(self, x, pos):
        """q [B, heads, N, d]; k, v [B, heads, N, d] (key/value heads repeated to the query heads)."""
        B, N, _ = x.shape
        h = self.in_norm(x)
        q = self.q_norm(self.q(h).view(B, N, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k(h).view(B, N, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v(h).view(B, N, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rope(q, pos, self.theta), rope(k, pos, self.theta)
        rep = self.heads // self.kv_heads
        return q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)

    def finish(self, x, att):
        if att is not None:
            B, _, N, _ = att.shape
            x = x + self.o(att.transpose(1, 2).reshape(B, N, -1))
        h = self.post_norm(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return self.out_norm(x)


@torch.no_grad()
def sequential_chain(draft, emb_w, head_w, tokens, feats, s, k):
    """One round drafted the way an engine drafts it, step by step with a growing key/value list: the
    target-fed entries 0..s, then k - 1 steps on the draft's own feature and token. Returns the k draft tokens,
    features and logits; levels_forward's entry s must give the same (check_levels)."""
    x = draft.fc(torch.cat([emb_w[tokens[:, 1:s + 2]], feats[:, :s + 1]], -1))
    if draft.attention:
        q, ks, vs = draft.project(x, torch.arange(s + 1, device=tokens.device))
        q = q[:, :, -1:]
    x = x[:, -1:]
    toks, fs, ls = [], [], []
    for j in range(k):
        att = None
        if draft.attention:
            p = torch.softmax(torch.matmul(q, ks.transpose(-1, -2)).float() / math.sqrt(draft.head_dim), -1)
            att = torch.matmul(p.to(vs.dtype), vs)
        f = draft.finish(x, att)
        logits = torch.matmul(f, head_w.t())
        d = logits.argmax(-1)
        toks.append(d[:, 0])
        fs.append(f[:, 0])
        ls.append(logits[:, 0])
        x = draft.fc(torch.cat([emb_w[d], f], -1))
        if draft.attention:
            q, kn, vn = draft.project(x, torch.tensor([s + 1 + j], device=tokens.device))
            ks, vs = torch.cat([ks, kn], 2), torch.cat([vs, vn], 2)
    return torch.stack(toks, 1), torch.stack(fs, 1), torch.stack(ls, 1)


# Qwen3's names for the one layer (so the engine's checkpoint code reads it as a one-layer Qwen3 model whose
# embedding and LM head come from the target), plus the input matrix.
SAVE_NAMES = {"fc": "model.fc", "in_norm": "model.layers.0.input_layernorm", "q": "model.layers.0.self_attn.q_proj",
              "k": "model.layers.0.self_attn.k_proj", "v": "model.layers.0.self_attn.v_proj",
              "o": "model.layers.0.self_attn.o_proj", "q_norm": "model.layers.0.self_attn.q_norm",
              "k_norm": "model.layers.0.self_attn.k_norm", "post_norm": "model.layers.0.post_attention_layernorm",
              "gate": "model.layers.0.mlp.gate_proj", "up": "model.layers.0.mlp.up_proj",
              "down": "model.layers.0.mlp.down_proj", "out_norm": "model.norm"}


def write_safetensors(state, path):
    """bf16 tensors as a safetensors file (the format is an 8-byte header length, a JSON header, the data),
    written here so that a machine without the safetensors package (the dry run's) writes the same file."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(state):
        t = state[name].to(torch.bfloat16).contiguous().cpu()
        blob = t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """write_safetensors' bf16 tensors back, as fp32 torch tensors by name."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        if h["dtype"] != "BF16":
            raise ValueError(f"{path}: {name} is {h['dtype']}, not BF16")
        a, b = h["data_offsets"]
        raw = torch.frombuffer(bytearray(data[a:b]), dtype=torch.int16)
        out[name] = raw.view(torch.bfloat16).float().reshape(h["shape"])
    return out


def load_draft_state(draft, d):
    """A saved draft's weights (save_draft's directory) into `draft`, whose shape must match."""
    saved = read_safetensors(os.path.join(d, "model.safetensors"))
    state = {}
    for k in draft.state_dict():
        module, leaf = k.rsplit(".", 1)
        state[k] = saved.pop(SAVE_NAMES[module] + "." + leaf)
    if saved:
        raise ValueError(f"{d}: tensors this draft does not have: {sorted(saved)}")
    draft.load_state_dict(state)


def save_draft(draft, cfg, levels, made_by, d):
    """The draft as a model directory: model.safetensors (bf16) and a config.json that says what it reads."""
    os.makedirs(d, exist_ok=True)
    state = {}
    for k, v in draft.state_dict().items():
        module, leaf = k.rsplit(".", 1)
        state[SAVE_NAMES[module] + "." + leaf] = v.detach().to(torch.bfloat16).contiguous().cpu()
    write_safetensors(state, os.path.join(d, "model.safetensors"))
    conf = {"architectures": ["StrataFeatureDraft"], "model_type": "strata_feature_draft",
            "feature": "the target's final-normed hidden state (its LM head's input) at the position before the token",
            "fc_input": ["embedding", "feature"], "embedding_and_lm_head": "target",
            "attention": draft.attention, "hidden_size": cfg.hidden_size, "num_hidden_layers": 1,
            "num_attention_heads": draft.heads, "num_key_value_heads": draft.kv_heads, "head_dim": draft.head_dim,
            "intermediate_size": draft.down.in_features, "hidden_act": "silu", "rms_norm_eps": cfg.rms_norm_eps,
            "rope_parameters": {"rope_theta": draft.theta, "rope_type": "default"},
            "max_position_embeddings": cfg.max_position_embeddings, "vocab_size": cfg.vocab_size,
            "trained_levels": levels, "made_by": made_by}
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
        json.dump(conf, f, indent=1)


