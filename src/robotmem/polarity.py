"""Polarity of a lesson: its decisive words in reading order, and whether two lessons point opposite ways.

A lesson and its opposite share all words but one ("safe" and "unsafe", "open" and "closed", "成功" and
"失败"), so word Jaccard and embedding cosine call them the same text. ``opposed`` is the guard that dedup
and consolidation both apply: two lessons are opposed when their decisive words (``polarity_lexicon``)
differ in kind, pole or order, or when one holds a word that the other negates with a prefix ("unsafe"
against "safe", "incorrect" against "correct"). Case, width, punctuation and filler words change neither.
Pure functions.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from robotmem import polarity_lexicon as lexicon
from robotmem.text import CJK_RANGES

NEGATION = "not"
# Chinese runs are matched against the lexicon; other runs give letter-only words ("left_arm" is "left" "arm",
# digits are compared by dedup.same_numbers).
_TOKEN = re.compile(rf"(?P<cjk>[{CJK_RANGES}]+)|(?P<word>(?:(?![{CJK_RANGES}])[^\W\d_])+)")
_CONTRACTED_NOT = re.compile(r"n['’]t\b")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
# A prefixed word negates another only when at least this much of it is left ("undo" is not "un" + "do").
_MIN_STEM = 3


def _pole_table(pairs: Iterable[tuple[str, str]], negators: str) -> dict[str, str]:
    """Map every form to its mark: the first form of its pole, or ``NEGATION`` for a negator."""
    table = {form: NEGATION for form in negators.split()}
    for pair in pairs:
        for pole in pair:
            forms = pole.split()
            table.update({form: forms[0] for form in forms})
    return table


_MARKS_EN = _pole_table(lexicon.ANTONYMS_EN, lexicon.NEGATORS_EN)
# An exception maps to "": matched (so it shields its characters) but marking nothing.
_MARKS_ZH = {
    **_pole_table(lexicon.ANTONYMS_ZH, lexicon.NEGATORS_ZH),
    **dict.fromkeys(lexicon.EXCEPTIONS_ZH.split(), ""),
}
_LONGEST_ZH = max(len(term) for term in _MARKS_ZH)
_STARTS_ZH = frozenset(term[0] for term in _MARKS_ZH)
_PREFIX_EXCEPTIONS = frozenset(lexicon.PREFIX_EXCEPTIONS_EN.split())


@dataclass(frozen=True, slots=True)
class Polarity:
    """What decides the direction of a lesson."""

    marks: tuple[str, ...]  # decisive words in reading order, each as the first form of its pole
    words: frozenset[str]  # letter-only words, for prefix negation against another lesson


@functools.lru_cache(maxsize=4096)
def polarity(text: str) -> Polarity:
    """Return the decisive marks and the words of ``text`` (NFKC, case-folded; "n't" reads as "not")."""
    folded = _CONTRACTED_NOT.sub(" not", unicodedata.normalize("NFKC", text).casefold())
    tokens = _TOKEN.findall(folded)
    marks: list[str] = []
    for cjk, word in tokens:
        if word:
            mark = _MARKS_EN.get(word)
            if mark is not None:
                marks.append(mark)
        else:
            marks.extend(_cjk_marks(cjk))
    words = {word for _, word in tokens if word}
    return Polarity(tuple(marks), frozenset(words))


def opposed(left: Polarity, right: Polarity) -> bool:
    """Return True when the two lessons differ in a decisive word or one negates a word of the other."""
    if left.marks != right.marks:
        return True
    return _negates(left.words - right.words, right.words) or _negates(right.words - left.words, left.words)


def negated_stem(word: str) -> str | None:
    """Return what a negating prefix of ``word`` leaves ("unsafe" → "safe"), or None when it has none."""
    if word in _PREFIX_EXCEPTIONS:
        return None
    for prefix in lexicon.NEGATING_PREFIXES_EN:
        if word.startswith(prefix) and len(word) - len(prefix) >= _MIN_STEM:
            return word[len(prefix) :]
    return None


def _negates(only_here: frozenset[str], there: frozenset[str]) -> bool:
    """Return True when a word only one lesson holds is a word of the other negated by a prefix ("unsafe"
    against "safe"), or a word the other holds only negated ("stable" against "unstable")."""
    if not only_here:
        return False
    negated_here = {_base(stem) for word in only_here if (stem := negated_stem(word)) is not None}
    if negated_here & {_base(word) for word in there}:
        return True
    negated_there = {_base(stem) for word in there if (stem := negated_stem(word)) is not None}
    return any(_base(word) in negated_there for word in only_here)


def _base(word: str) -> str:
    """Return ``word`` without one inflection ending, so "unlocked" meets "lock" and "unsafely" "safe"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def _cjk_marks(run: str) -> Iterator[str]:
    """Yield the marks of a CJK run, reading left to right with the longest lexicon entry first."""
    position = 0
    while position < len(run):
        if run[position] not in _STARTS_ZH:
            position += 1
            continue
        for length in range(min(_LONGEST_ZH, len(run) - position), 0, -1):
            mark = _MARKS_ZH.get(run[position : position + length])
            if mark is not None:
                if mark:
                    yield mark
                position += length
                break
        else:
            position += 1
