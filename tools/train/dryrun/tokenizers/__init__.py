# Stub of the tokenizers API surface train_tiny.py uses: bytes as tokens after 3 specials (dry run only).
import json
__version__ = "stub"
class Regex:
    def __init__(self, p): self.p = p
class _Obj:
    def __init__(self, *a, **k): self.a, self.k = a, k
class models: BPE = _Obj
class normalizers: NFC = _Obj
class processors: ByteLevel = _Obj
class decoders: ByteLevel = _Obj
class trainers:
    class BpeTrainer(_Obj): pass
class pre_tokenizers:
    Sequence = _Obj; Split = _Obj
    class ByteLevel(_Obj):
        @staticmethod
        def alphabet(): return [chr(i) for i in range(256)]
class _Enc:
    def __init__(self, ids): self.ids = ids
class Tokenizer:
    def __init__(self, model=None): self.specials = []
    def train_from_iterator(self, it, trainer=None, length=None):
        n = sum(1 for _ in it)
        assert length == n, (length, n)
        self.specials = list(trainer.k["special_tokens"])
    def save(self, path):
        json.dump({"version": "1.0", "added_tokens": self.specials, "normalizer": None, "pre_tokenizer": {"type": "x"},
                   "post_processor": None, "decoder": None, "model": {"type": "BPE"}}, open(path, "w"))
    @staticmethod
    def from_file(path):
        j = json.load(open(path)); t = Tokenizer(); t.specials = j["added_tokens"]
        assert j["pre_tokenizer"]["type"] == "Sequence"
        return t
    def token_to_id(self, s): return self.specials.index(s) if s in self.specials else None
    def get_vocab_size(self, with_added_tokens=True): return 256 + len(self.specials)
    def encode(self, text, add_special_tokens=True):
        ids, i = [], 0
        while i < len(text):
            for k, s in enumerate(self.specials):
                if text.startswith(s, i): ids.append(k); i += len(s); break
            else:
                ids.extend(3 + b for b in text[i].encode("utf-8")); i += 1
        return _Enc(ids)
    def encode_batch(self, texts, add_special_tokens=True): return [self.encode(t, add_special_tokens) for t in texts]
    def decode(self, ids, skip_special_tokens=True):
        out, buf = [], b""
        for i in ids:
            if i < 3:
                out.append(buf.decode("utf-8", "replace")); buf = b""
                if not skip_special_tokens: out.append(self.specials[i])
            else: buf += bytes([i - 3])
        out.append(buf.decode("utf-8", "replace"))
        return "".join(out)
