#!/usr/bin/env python3
"""Writes random-weight bf16 Llama checkpoints shaped like Llama-3.2-1B or Llama-3.1-8B, for benchmarks.

Runs on the GPU machine (torch + safetensors there): the weights are drawn on the GPU, so the 8B shape takes
seconds rather than the minutes numpy would need. The output is not a language model, only something with the
size, layout and config of one (config.json, generation_config.json, sharded model.safetensors + index), so
decode and prefill speed can be measured on it. A tokenizer.json/tokenizer_config.json can be copied in with
--tokenizer-dir (the Llama 3 tokenizer has the same 128256-entry vocabulary) so `strata serve` runs on it.

    python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b [--tokenizer-dir DIR]
"""
import argparse
import json
import os
import shutil

import torch
from safetensors.torch import save_file

SHAPES = {
    # Llama-3.2-1B: tied embeddings, head_dim 64.
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
               head_dim=64, intermediate_size=8192, tie_word_embeddings=True, rope_factor=32.0),
    # Llama-3.1-8B: untied LM head, head_dim 128.
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               head_dim=128, intermediate_size=14336, tie_word_embeddings=False, rope_factor=8.0),
}
VOCAB = 128256


def config_for(shape):
    s = dict(SHAPES[shape])
    factor = s.pop("rope_factor")
    return dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=VOCAB,
                max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0, hidden_act="silu",
                attention_bias=False, mlp_bias=False, bos_token_id=128000, eos_token_id=128001,
                torch_dtype="bfloat16",
                rope_scaling=dict(rope_type="llama3", factor=factor, low_freq_factor=1.0, high_freq_factor=4.0,
                                  original_max_position_embeddings=8192), **s)


def tensor_shapes(c):
    h, hd = c["hidden_size"], c["head_dim"]
    q, kv, ff = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd, c["intermediate_size"]
    out = [("model.embed_tokens.weight", (VOCAB, h))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (h,)), (p + "self_attn.q_proj.weight", (q, h)),
                (p + "self_attn.k_proj.weight", (kv, h)), (p + "self_attn.v_proj.weight", (kv, h)),
                (p + "self_attn.o_proj.weight", (h, q)), (p + "post_attention_layernorm.weight", (h,)),
                (p + "mlp.gate_proj.weight", (ff, h)), (p + "mlp.up_proj.weight", (ff, h)),
                (p + "mlp.down_proj.weight", (h, ff))]
    out.append(("model.norm.weight", (h,)))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", (VOCAB, h)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-gb", type=float, default=4.0)
    ap.add_argument("--tokenizer-dir", default="")
    a = ap.parse_args()
    c = config_for(a.shape)
    os.makedirs(a.out, exist_ok=True)
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    shards, cur, cur_bytes = [], {}, 0
    for name, shape in tensor_shapes(c):
        if len(shape) == 1:
            t = torch.ones(shape, dtype=torch.bfloat16)
        else:
            # std 1/sqrt(fan_in) keeps activations O(1) through the random layers.
            t = (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * shape[1] ** -0.5)
            t = t.to(torch.bfloat16).cpu()
        cur[name] = t
        cur_bytes += t.numel() * 2
        if cur_bytes >= a.shard_gb * 1e9:
            shards.append(cur)
            cur, cur_bytes = {}, 0
    if cur:
        shards.append(cur)
    weight_map, total = {}, 0
    for i, tensors in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(tensors, os.path.join(a.out, fname), metadata={"format": "pt"})
        for k, v in tensors.items():
            weight_map[k] = fname
            total += v.numel() * 2
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 128000, "eos_token_id": 128001}, f)
    if a.tokenizer_dir:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(a.tokenizer_dir, n), os.path.join(a.out, n))
    print(f"wrote {a.out}: {a.shape}, {total / 1e9:.2f} GB in {len(shards)} shards", flush=True)


if __name__ == "__main__":
    main()
