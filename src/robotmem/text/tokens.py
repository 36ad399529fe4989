"""Text handling shared by indexing, querying and dedup: normalisation, CJK-aware tokens, FTS5 queries.

Chinese has no spaces, so CJK runs are segmented into words with rjieba (jieba's dictionary in Rust);
other runs are split into lower-cased words, keeping ``grip_force`` and ``12.5`` whole and adding
their parts. FTS5 then indexes the space-joined tokens with its ``unicode61`` tokenizer.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any


@functools.cache
def _segmenter() -> Any:
    """Return the rjieba module, imported on the first CJK text (its dictionary takes ~250 ms to load)."""
    import rjieba

    return rjieba


# CJK unified ideographs (+ extension A), kana and hangul are segmented by the dictionary.
CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
_WORD = re.compile(r"[^\W_]+(?:[._][^\W_]+)*", re.UNICODE)
_PARTS = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+", re.UNICODE)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?")
_SPACES = re.compile(r"\s+")
_ASCII_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")

# Words too common to help a ranked OR query; they are still indexed.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def normalize(text: str) -> str:
    """Return ``text`` NFKC-normalised, case-folded, with runs of whitespace collapsed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def content_hash(text: str) -> str:
    """Return the hex digest identifying ``text`` up to case, width and whitespace."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


def _latin_tokens(run: str, *, expand: bool) -> Iterable[str]:
    for word in _WORD.findall(run):
        yield word
        if expand:
            parts = _PARTS.findall(word)
            if len(parts) > 1:
                yield from parts


def tokens(text: str, *, for_index: bool = False) -> list[str]:
    """Return the word tokens of ``text`` in order.

    CJK runs become dictionary words (for the index also their sub-words, so 机器 finds 机器人);
    other runs become lower-case words, and compounds such as ``grip_force`` or ``12.5n`` also yield
    their parts when ``for_index`` is true or when used in a query.
    """
    out: list[str] = []
    folded = normalize(text)
    position = 0
    for match in _CJK_RUN.finditer(folded):
        out.extend(_latin_tokens(folded[position : match.start()], expand=True))
        run = match.group()
        words = _segmenter().cut(run)
        if for_index:
            known = set(words)
            words = words + [word for word in _segmenter().cut_for_search(run) if word not in known]
        out.extend(word for word in words if word.strip())
        position = match.end()
    out.extend(_latin_tokens(folded[position:], expand=True))
    return out


def index_text(*parts: str) -> str:
    """Return the space-joined tokens FTS5 indexes for a memory made of ``parts``."""
    return " ".join(token for part in parts if part for token in tokens(part, for_index=True))


def fts_query(query: str) -> str | None:
    """Return an FTS5 MATCH expression: the OR of the query's distinct tokens, or None if none.

    Every token is double-quoted, so FTS5 operators typed by a user (``NEAR``, ``AND``, ``*``,
    ``:``, ``-``, parentheses) are searched as words instead of being parsed as syntax.
    """
    return or_match(query_tokens(query))


def or_match(words: Sequence[str]) -> str | None:
    """Return the FTS5 OR of ``words``, each double-quoted (``fts_query`` of already split tokens)."""
    if not words:
        return None
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in words)


def query_tokens(query: str) -> list[str]:
    """Return the distinct tokens of ``query`` that are not stopwords, in order (the words of ``fts_query``)."""
    seen: dict[str, None] = {}
    for token in tokens(query):
        if token not in STOPWORDS:
            seen.setdefault(token, None)
    return list(seen)


def word_set(text: str) -> frozenset[str]:
    """Return the set of words of ``text`` (punctuation dropped) used for Jaccard similarity."""
    return frozenset(tokens_plain(text))


def tokens_plain(text: str) -> list[str]:
    """Return the words of ``text`` without compound expansion (CJK by precise segmentation)."""
    out: list[str] = []
    folded = normalize(text)
    position = 0
    for match in _CJK_RUN.finditer(folded):
        out.extend(_WORD.findall(folded[position : match.start()]))
        out.extend(segment(match.group()))
        position = match.end()
    out.extend(_WORD.findall(folded[position:]))
    return out


def segment(run: str, *, guess: bool = True) -> list[str]:
    """Return the words of a CJK ``run`` (precise mode, no overlapping sub-words).

    With ``guess`` false, only dictionary words: characters the dictionary does not join stay single
    (jieba's HMM otherwise guesses new words, such as a noun and the particle after it).
    """
    return [word for word in _segmenter().cut(run, guess) if word.strip()]


def numbers(text: str) -> tuple[str, ...]:
    """Return the numbers written in ``text``, in order, as normalised strings (``12.50`` → ``12.5``)."""
    out = []
    for raw in _NUMBER.findall(unicodedata.normalize("NFKC", text)):
        value = raw.lstrip("+")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.append(value or "0")
    return tuple(out)


def numbers_query(text: str) -> str | None:
    """Return an FTS5 MATCH expression that every indexed text with the same ``numbers`` as ``text`` matches.

    A written number such as ``+12.50`` is indexed as a token of its digits (``12.50``), and ``numbers``
    only drops the sign and trailing decimal zeros, so a text with the number 12.5 holds the token ``12.5``
    or one starting with ``12.50`` (``"12.5" OR "12.50"*``), and a text with 7 holds ``7`` or one starting
    with ``7.0``. Only the two longest numbers are asked for (each term costs a lookup in every index
    segment, and long numbers are the rare ones), so other texts may match too. Returns None when
    ``text`` has no number in ASCII digits.
    """
    terms = [f'("{digits}" OR "{prefix}"*)' for digits, prefix in number_terms(text)]
    return " AND ".join(terms) or None


def number_terms(text: str) -> list[tuple[str, str]]:
    """Return ``(digits, prefix)`` for the two longest numbers of ``text`` (see ``numbers_query``): an
    indexed text with the same number holds the token ``digits`` or a token starting with ``prefix``."""
    written = {value.lstrip("-") for value in numbers(text)}
    longest = sorted((d for d in written if _ASCII_NUMBER.fullmatch(d)), key=lambda d: (-len(d), d))[:2]
    return [(d, f"{d}0" if "." in d else f"{d}.0") for d in longest]


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    """Return |left ∩ right| / |left ∪ right| (1.0 for two empty sets)."""
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)
