"""The content words of a lesson: what is left of its wording once case, punctuation and filler are gone.

Dedup and consolidation call two texts one experience only when their content words are the same, in the
same order (``dedup.same_experience``). The rule is inverted on purpose: a list of opposites can never be
complete ("large" and "small", "green" and "red", "开" and "关", "aligned" and "misaligned" were each
missing from one), while the words that never change a lesson's meaning are few and known (``filler``).
So any word outside the filler lists decides: an antonym, a colour, a size, a state, a direction, a
negator ("not", "never", "不", "未", "无"), a negating prefix ("unsafe" is another word than "safe"), an
object, a modal, a number. Reordered words decide too ("open the door before you close the gripper").

What does not decide: letter case and width (NFKC, case-folded), punctuation and spacing ("20N" and
"20 N", "0.80" and "0.8"), contractions ("don't" is "do not", "it's" is "it"), a plural or third-person
"-s" ("boxes" and "box"), the filler words and phrases of ``filler``, and a link word right after a quantity
("12 N of force" and "12 N force"). Chinese is segmented into words
by the dictionary (rjieba, dictionary words only: a guessed word could swallow a particle); single-character
words such as 开, 关, 大, 小 count like any other. Pure functions.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from robotmem.text import filler
from robotmem.text.tokens import CJK_RANGES, segment

# Punctuation that ends a clause; other symbols (hyphens, brackets, quotes, slashes) only separate words.
_BREAKS = ",;:!?.。，；：！？、…—"
_COMMAS = frozenset(",，")
_CJK = re.compile(f"[{CJK_RANGES}]")
# Chinese runs, numbers, words of other letters, clause-ending punctuation (one group each).
_TOKEN = re.compile(rf"([{CJK_RANGES}]+)|(\d+(?:\.\d+)?)|([^\W\d_{CJK_RANGES}]+)|([{_BREAKS}])")
# "won't" → "will not", "doesn't" → "does not", "cannot" → "can not", "it'll" → "it will"; "'s", "'re", "'ve",
# "'m", "'d" are dropped (a possessive, or an auxiliary, which is filler anyway).
_CONTRACTION = re.compile(r"\b(won|can|shan)['’]t\b|n['’]t\b|\bcannot\b|['’](ll|s|re|ve|m|d)\b")
_NEGATED_MODALS = {"won": "will not", "can": "can not", "shan": "shall not"}
# A plural or third-person ending is dropped only when at least this much of the word is left.
_MIN_STEM = 3


def _words(*lists: str) -> frozenset[str]:
    return frozenset(word for words in lists for word in words.split())


def _whole(*lists: str) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(p.split()) for phrases in lists for p in phrases.split("|") if p.split())


def _alternation(*lists: str) -> re.Pattern[str]:
    """Match any of the phrases of ``lists`` as whole space-separated words, the longest first."""
    found = {" ".join(p.split()) for phrases in lists for p in phrases.split("|") if p.split()}
    ordered = sorted(found, key=lambda phrase: (-len(phrase.split()), phrase))
    return re.compile("(?<![^ ])(?:" + "|".join(map(re.escape, ordered)) + ")(?![^ ])")


FILLER_WORDS = _words(filler.FILLER_WORDS_EN, filler.FILLER_WORDS_ZH)
FILLER_PHRASES = _whole(filler.FILLER_PHRASES_EN, filler.FILLER_PHRASES_ZH)
FILLER_CLAUSES = _whole(filler.FILLER_CLAUSES_EN, filler.FILLER_CLAUSES_ZH)
_PHRASES = _alternation(filler.FILLER_PHRASES_EN, filler.FILLER_PHRASES_ZH)
_PHRASE_STARTS = frozenset(phrase[0] for phrase in FILLER_PHRASES)
_LONGEST_CLAUSE = max(len(phrase) for phrase in FILLER_CLAUSES)
QUANTITY_LINKS = _words(filler.QUANTITY_LINKS_EN)
OPENERS = _words(filler.OPENERS_EN, filler.OPENERS_ZH)
COMMA_OPENERS = _words(filler.COMMA_OPENERS_EN, filler.COMMA_OPENERS_ZH)


@functools.lru_cache(maxsize=4096)
def content_words(text: str) -> tuple[str, ...]:
    """Return the words of ``text`` that carry its meaning, in reading order.

    Numbers are kept, normalised as ``text.numbers`` writes them (without their sign, which
    ``dedup.same_numbers`` compares); filler words and phrases are dropped, and so are a clause that is a
    filler clause ("most importantly"), a first clause made only of openers ("Note:", "Right,",
    "注意：") and a link word right after a quantity ("12 N of force"); English words lose a plural or
    third-person "-s". Chinese is segmented to find its filler words, then returned character by character.
    """
    out: list[str] = []
    for word in _kept_words(text):
        if word.isascii():
            out.append(_stem(word) if word[-1] == "s" else word)
        elif _CJK.match(word):
            out.extend(word)  # by character: punctuation can move a word boundary ("前先", "前，先")
        else:
            out.append(word)
    return tuple(out)


def content_text(text: str) -> str:
    """Return the words of ``text`` that ``content_words`` keeps, as written (not stemmed, Chinese words
    whole), joined by spaces: what a word search for the same experience looks for."""
    return " ".join(_kept_words(text))


def _kept_words(text: str) -> list[str]:
    """The words of ``text`` without filler, openers and filler clauses, case-folded, in reading order."""
    clauses = _clauses(_folded(text))
    while len(clauses) > 1 and _is_opener(clauses[0]):
        del clauses[0]
    out: list[str] = []
    for words, _ in clauses:
        kept = _without_filler(words)
        if (
            len(kept) <= _LONGEST_CLAUSE
            and tuple(w for w in words if w not in FILLER_WORDS) in FILLER_CLAUSES
        ):
            continue
        out.extend(_without_quantity_links(kept))
    return out


def _without_quantity_links(words: list[str]) -> list[str]:
    """Return ``words`` without a link word ("of") right after a number or a number and its unit."""
    if QUANTITY_LINKS.isdisjoint(words):
        return words
    out: list[str] = []
    for word in words:
        if word in QUANTITY_LINKS and any(w[:1].isdigit() for w in out[-2:]):
            continue
        out.append(word)
    return out


def _folded(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    if "'" in folded or "’" in folded or "cannot" in folded:
        folded = _CONTRACTION.sub(_expanded, folded)
    return folded


def _expanded(match: re.Match[str]) -> str:
    modal, ending = match.group(1), match.group(2)
    if modal:
        return _NEGATED_MODALS[modal]
    if ending:
        return " will" if ending == "ll" else " "
    return "can not" if match.group() == "cannot" else " not"


def _clauses(folded: str) -> list[tuple[list[str], str]]:
    """Split ``folded`` into clauses: each its words and the punctuation that ends it ("" for the last)."""
    clauses: list[tuple[list[str], str]] = []
    words: list[str] = []
    for cjk, number, word, stop in _TOKEN.findall(folded):
        if word:
            words.append(word)
        elif cjk:
            words.extend(segment(cjk, guess=False))
        elif number:
            words.append(_number(number))
        elif words:
            clauses.append((words, stop))
            words = []
    if words:
        clauses.append((words, ""))
    return clauses


def _number(value: str) -> str:
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    return value or "0"


def _is_opener(clause: tuple[list[str], str]) -> bool:
    """Return True for a first clause of openers and fillers only ("note", "ok so", "right" before a comma)."""
    words, end = clause
    left = _without_filler(words)
    if not left or not all(word in OPENERS or word in COMMA_OPENERS for word in left):
        return False
    return end in _COMMAS or not any(word in COMMA_OPENERS for word in left)


def _without_filler(words: list[str]) -> list[str]:
    """Return ``words`` without filler phrases (whole, longest first) and filler words."""
    if not _PHRASE_STARTS.isdisjoint(words):
        joined = _PHRASES.sub(" ", " ".join(words))
        words = joined.split(" ")
    return [word for word in words if word and word not in FILLER_WORDS]


def _stem(word: str) -> str:
    """Return an English ``word`` without a plural or third-person ending ("boxes" → "box", "holds" → "hold")."""
    if word[-1] != "s" or len(word) - 1 < _MIN_STEM:
        return word
    if word.endswith("ies") and len(word) - 3 >= _MIN_STEM:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is")):
        return word  # "pass", "status", "axis" are not plurals
    return word[:-1]
