"""Anchor for the tokenization benchmark: the Python `tokenizers` package on the same
tokenizer.json and the same prompts, one encode call per prompt (no batching), best of N rounds.
Prints one JSON object: {"tokens": …, "seconds": …, "version": …}."""
import json, sys, time

from tokenizers import Tokenizer, __version__

tokenizer_path, items_path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = Tokenizer.from_file(tokenizer_path)
texts = [json.loads(line)["prompt_text"] for line in open(items_path, encoding="utf-8")]
best, tokens = None, 0
for _ in range(rounds):
    start = time.perf_counter()
    n = 0
    for text in texts:
        n += len(tok.encode(text, add_special_tokens=False).ids)
    elapsed = time.perf_counter() - start
    tokens = n
    best = elapsed if best is None else min(best, elapsed)
print(json.dumps({"tokens": tokens, "seconds": best, "version": __version__}))
