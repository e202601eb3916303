"""textprep.py - the text side of slow_host.py (tests/gpu/pystack): a corpus of
made-up documents and a hand-written tokenizer, imported by slow_host.py, which
pystack_check.py runs on the GPU machine with and without `apx analyze`.

The planted problem: tokenize() hashes every word character by character in pure Python
(FNV-1a), a few milliseconds of CPU a batch on the training loop's thread, while the GPU
waits for the batch. The line that burns the time carries the marker comment that
pystack_check.py looks for; apx's top host hotspot must be that line."""
import random
import time

VOCAB = 8192
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def make_corpus(docs, words, seed=0):
    """docs documents of `words` space-separated words from a 20,000-word vocabulary of
    3-12 letter words (the same every run: seeded)."""
    r = random.Random(seed)
    vocab = ["".join(r.choice(LETTERS) for _ in range(r.randint(3, 12))) for _ in range(20000)]
    return [" ".join(r.choice(vocab) for _ in range(words)) for _ in range(docs)]


def tokenize(texts, length):
    """Token ids of each text, cropped (or padded with 0) to `length`: every word hashed to an
    id in [0, VOCAB), the whole document before the crop, as a careless data pipeline does."""
    out = []
    for text in texts:
        ids = []
        for word in text.split():
            h = 2166136261
            for ch in word: h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF  # APX-EXPECT: host
            ids.append(h % VOCAB)
        out.append((ids + [0] * length)[:length])
    return out


def words_for(target_ms, docs, length, probe_words=400):
    """Words per document so that tokenize() of `docs` documents takes about target_ms on this
    CPU (measured here: the planted cost is a time, not an amount of text), at least `length`."""
    probe = make_corpus(docs, probe_words, seed=1)
    tokenize(probe, length)             # warm
    t0 = time.perf_counter()
    tokenize(probe, length)
    per_word_ms = (time.perf_counter() - t0) * 1e3 / (docs * probe_words)
    return max(length, int(target_ms / per_word_ms / docs))
