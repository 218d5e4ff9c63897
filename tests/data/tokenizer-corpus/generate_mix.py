#!/usr/bin/env python3
"""Writes mix_generated.txt: the hand-written corpus files cut into words and
re-assembled with a fixed seed, interleaved with digit runs of every length
1..20, whitespace/newline/tab runs, non-ASCII spaces and controls, contractions
in all cases, and words of different scripts glued together. Deterministic."""
import random
from pathlib import Path

here = Path(__file__).parent
rng = random.Random(20261129)
sources = ["prose_en.txt", "multilingual.txt", "emoji_symbols.txt", "code.txt", "special_tokens.txt"]
words = []
for name in sources:
    words += (here / name).read_text(encoding="utf-8").split()

spaces = [" ", "  ", "   ", "    ", "\t", "\t\t", " \t ", "\n", "\n\n", "\n\n\n", "\r\n", "\r", " \n ", "\u00a0",
          "\u3000", "\u2009", "\u0085", "\u2028", "\u2029", "\u000b", "\u000c", "\u1680", "\u202f", "\u205f",
          " \u00a0 ", "\n    ", "\n\t", "      \n"]
extras = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'d", "'D",
          "don't", "DON'T", "I'm", "we'll", "they'RE", "'", "''", "'x", "\u2019s", "ſ", "'ſ", "\u200d", "\u200b",
          "\ufeff", "\u00ad", "\x01", "\x1f", "\x7f", "e\u0301", "\u0301", "\ufe0f", "\U0001F600", "\U0010FFFD",
          "\ue000", "\U000E0041", "\u0378", "\ufffd", "\ufffe"]
parts = []
while sum(len(p.encode("utf-8")) for p in parts) < 110_000:
    r = rng.random()
    if r < 0.55:
        parts.append(rng.choice(words))
    elif r < 0.65:
        n = rng.randint(1, 20)
        parts.append("".join(rng.choice("0123456789") for _ in range(n)))
    elif r < 0.72:
        parts.append(rng.choice(extras))
    elif r < 0.80:
        parts.append(rng.choice(words) + rng.choice(words))  # scripts glued together
    else:
        parts.append(rng.choice(spaces))
        continue
    parts.append(rng.choice(spaces) if rng.random() < 0.3 else " ")
for n in range(1, 21):
    parts.append("".join(str((n + i) % 10) for i in range(n)) + "\n")
(here / "mix_generated.txt").write_text("".join(parts), encoding="utf-8", newline="")
