# Stub of the transformers surface train_tiny.py uses: a tiny causal model (dry run only).
import json, os, types
import torch
__version__ = "5.17.0"
class Qwen3Config:
    def __init__(self, **kw):
        self.__dict__.update(kw); self._attn_implementation = None
class _Layer(torch.nn.Module):
    # A residual block named as Qwen3's are where retrain_draft.grow_draft reaches in (o_proj, down_proj).
    def __init__(self, hidden, inter):
        super().__init__()
        self.self_attn = torch.nn.Module(); self.self_attn.o_proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.mlp = torch.nn.Module(); self.mlp.up_proj = torch.nn.Linear(hidden, inter, bias=False)
        self.mlp.down_proj = torch.nn.Linear(inter, hidden, bias=False)
    def forward(self, h):
        n = torch.arange(1, h.shape[1] + 1, device=h.device, dtype=h.dtype)[None, :, None]
        h = h + self.self_attn.o_proj(h.cumsum(1) / n)
        return h + self.mlp.down_proj(torch.nn.functional.silu(self.mlp.up_proj(h)))
class _Body(torch.nn.Module):
    # The stand-in's body: forward gives last_hidden_state as transformers' model.model does (eagle_draft.py).
    def forward(self, input_ids=None):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return types.SimpleNamespace(last_hidden_state=self.norm(h))
class Qwen3ForCausalLM(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = _Body()
        self.model.embed_tokens = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.model.norm = torch.nn.LayerNorm(config.hidden_size)
        self.model.layers = torch.nn.ModuleList(_Layer(config.hidden_size, config.intermediate_size)
                                                for _ in range(config.num_hidden_layers))
        self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
    def get_input_embeddings(self): return self.model.embed_tokens
    def tie_weights(self): self.lm_head.weight = self.model.embed_tokens.weight
    def forward(self, input_ids=None, use_cache=None, past_key_values=None, logits_to_keep=0):
        assert input_ids.dtype == torch.int64 and input_ids.dim() == 2, (input_ids.dtype, input_ids.shape)
        new = input_ids.shape[1]
        if past_key_values is not None:  # this stand-in keeps the ids so far as its cache and recomputes them
            input_ids = torch.cat([past_key_values, input_ids], dim=1)
        h = self.model(input_ids=input_ids).last_hidden_state
        keep = logits_to_keep if 0 < logits_to_keep < new else new
        return types.SimpleNamespace(logits=self.lm_head(h)[:, -keep:], past_key_values=input_ids if use_cache else None)
    def save_pretrained(self, d):
        torch.save(self.state_dict(), os.path.join(d, "model.safetensors"))
        cfg = {k: v for k, v in self.config.__dict__.items() if not k.startswith("_")}
        cfg["dtype"] = str(next(self.parameters()).dtype)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
        json.dump({}, open(os.path.join(d, "generation_config.json"), "w"))
    @classmethod
    def from_pretrained(cls, d, dtype=None, attn_implementation=None):
        cfg = json.load(open(os.path.join(d, "config.json"))); cfg.pop("dtype")
        m = cls(Qwen3Config(**cfg)); m.load_state_dict(torch.load(os.path.join(d, "model.safetensors")))
        return m.to(dtype)
AutoModelForCausalLM = Qwen3ForCausalLM
class AutoTokenizer:
    @staticmethod
    def from_pretrained(d): raise OSError("stub: no AutoTokenizer in the dry run")
