"""BM25 over tool names and descriptions: what `tool_search` ranks with.

Names are split at `_`, `-`, `.` and camelCase, and count twice (a name says more than a
sentence of description); words are lower-cased and lightly stemmed (plural and -ing/-ed).
Ties break by name, so the same query always gives the same order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

_WORD = re.compile(r"[A-Za-z]+|[0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
K1 = 1.2
B = 0.75
NAME_WEIGHT = 2


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def tokens(text: str) -> list[str]:
    spaced = _CAMEL.sub(" ", text)
    return [_stem(w.lower()) for w in _WORD.findall(spaced)]


@dataclass(frozen=True)
class Document:
    key: str
    name: str
    description: str


def rank(query: str, docs: list[Document], limit: int) -> list[tuple[Document, float]]:
    """The best `limit` documents with a positive score, best first."""
    terms = list(dict.fromkeys(tokens(query)))
    if not terms or not docs:
        return []
    bags = [Counter(tokens(d.name) * NAME_WEIGHT + tokens(d.description)) for d in docs]
    lengths = [sum(b.values()) for b in bags]
    average = sum(lengths) / len(lengths) or 1.0
    n = len(docs)
    scored: list[tuple[Document, float]] = []
    for doc, bag, length in zip(docs, bags, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = bag.get(term, 0)
            if not tf:
                continue
            df = sum(1 for b in bags if term in b)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        if score > 0:
            scored.append((doc, score))
    scored.sort(key=lambda item: (-item[1], item[0].key))
    return scored[:limit]
