"""Writes the HF-tokenizers form (tokenizer.json) of a Qwen2-family GGUF's embedded BPE tokenizer,
and its chat template. Usage: python gguf_tokenizer.py MODEL.gguf tokenizer.json chat_template.jinja
Needs the PyPI packages gguf and tokenizers. Vocabulary and merges come from the GGUF; the
pre-tokenizer is the Qwen2 split pattern then ByteLevel (GGUF `pre=qwen2`); control and user-defined
tokens (types 3 and 4) are special added tokens. Check the output against the llama.cpp server's
/tokenize on real prompts before pinning it (fixtures/tokenizers/*/README.md says how it was checked).
"""
import sys, json
from gguf import GGUFReader
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, normalizers, AddedToken, Regex
r = GGUFReader(sys.argv[1])
def field(name):
    f = r.fields[name]
    if len(f.types) > 1 or (f.types and f.types[0].name == 'ARRAY'):
        return [bytes(f.parts[i]).decode('utf-8') if f.types[-1].name == 'STRING' else f.parts[i].tolist()[0] for i in f.data]
    v = f.parts[f.data[0]]
    return bytes(v).decode('utf-8') if f.types[0].name == 'STRING' else v.tolist()[0]
tokens = field('tokenizer.ggml.tokens')
types = field('tokenizer.ggml.token_type')
merges = field('tokenizer.ggml.merges')
print(field('tokenizer.ggml.model'), field('tokenizer.ggml.pre'), len(tokens), len(merges), file=sys.stderr)
vocab = {t: i for i, t in enumerate(tokens)}
bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(' ', 1)) for m in merges], byte_fallback=False, fuse_unk=False)
tok = Tokenizer(bpe)
tok.normalizer = normalizers.NFC()
pat = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pat), behavior='isolated', invert=False), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
tok.decoder = decoders.ByteLevel()
added = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty in (3, 4)]
tok.add_special_tokens(added)
tok.save(sys.argv[2])
print(len(added), 'added', field('tokenizer.chat_template')[:200], file=sys.stderr)
open(sys.argv[3], 'w').write(field('tokenizer.chat_template'))
