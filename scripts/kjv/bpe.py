"""A byte-level BPE trainer that writes a standard HF `tokenizer.json` (the GPT-2 scheme).

Text is split by GPT-2's pre-tokenizer pattern, each piece's UTF-8 bytes are mapped to printable
characters (GPT-2's byte-to-unicode table, so every byte is a token and nothing is ever unknown), and
the most frequent adjacent pair is merged until the vocabulary is full. The file is loaded by HF
tokenizers, transformers.js and hfstatic alike; `encode` here reproduces their result on ASCII text, which
is all the trainer sees.
"""

import collections
import json
import re

# GPT-2's pattern with \p{L} / \p{N} spelled for ASCII: Python's `re` has no Unicode classes, and the
# training corpus is ASCII (checked in `train`). tokenizer.json carries the real pattern via ByteLevel.
_PRETOKEN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's table: printable bytes map to themselves, the rest to code points from 256 up."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_CHAR = bytes_to_unicode()


def pieces(text):
    """The pre-tokenized pieces of `text`, each as its byte-level string."""
    return ["".join(_BYTE_CHAR[b] for b in p.encode("utf-8")) for p in _PRETOKEN.findall(text)]


def _merge_word(word, a, b, ab):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
            out.append(ab)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def train(texts, vocab_size, specials):
    """Learns merges until `specials` + 256 bytes + merges fill `vocab_size`. Returns (vocab, merges)."""
    counts = collections.Counter()
    for text in texts:
        if not text.isascii():
            raise ValueError("the trainer's pre-tokenizer handles ASCII text only")
        counts.update(pieces(text))
    words = [list(w) for w in counts]
    freq = [counts[w] for w in counts]
    pair_count = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pair_count[p] += freq[i]
            where[p].add(i)
    vocab = {s: i for i, s in enumerate(specials)}
    for b in range(256):
        vocab[_BYTE_CHAR[b]] = len(vocab)
    merges = []
    while len(vocab) < vocab_size and pair_count:
        # Most frequent pair; ties go to the lexicographically smallest so a rerun learns the same merges.
        (a, b), n = min(pair_count.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < 2:
            break
        ab = a + b
        merges.append((a, b))
        vocab[ab] = len(vocab)
        for i in list(where[(a, b)]):
            old = words[i]
            for p in zip(old, old[1:]):
                pair_count[p] -= freq[i]
                if pair_count[p] <= 0:
                    del pair_count[p]
            new = _merge_word(old, a, b, ab)
            words[i] = new
            for p in zip(new, new[1:]):
                pair_count[p] += freq[i]
                where[p].add(i)
        del where[(a, b)]
    return vocab, merges


class Encoder:
    """Encodes text with learned merges (lowest rank first, as BPE applies them), caching each piece."""

    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.rank = {m: r for r, m in enumerate(merges)}
        self.cache = {}

    def _piece(self, piece):
        ids = self.cache.get(piece)
        if ids is not None:
            return ids
        word = list(piece)
        while len(word) > 1:
            best = min(zip(word, word[1:]), key=lambda p: self.rank.get(p, 1 << 30))
            if best not in self.rank:
                break
            word = _merge_word(word, best[0], best[1], best[0] + best[1])
        ids = [self.vocab[s] for s in word]
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        out = []
        for p in pieces(text):
            out.extend(self._piece(p))
        return out


def tokenizer_json(vocab, merges, bos, eos):
    """The tokenizer.json document: byte-level BPE, BOS prepended by the post-processor (as Llama's)."""
    special = [bos, eos]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for s in special],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [vocab[bos]], "tokens": [bos]}},
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def write(path, vocab, merges, bos, eos):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges, bos, eos), f, ensure_ascii=False, indent=1)
        f.write("\n")
