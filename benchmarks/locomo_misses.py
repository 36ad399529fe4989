"""Why a LoCoMo question's evidence is missing from the first five memories: flags counted per category.

A miss is a question none of whose gold turns is among the first ``k`` memories recalled. Each miss gets
every flag that holds (they overlap), and one primary kind, the first that holds in ``KINDS`` order:

    unstored         no gold id names a stored turn (a malformed or wrong evidence id)
    neighbour        a gold turn sits within ``SPAN`` turns of a recalled one, in the same session
    near             the first gold turn is ranked k+1..10
    no_shared_words  no gold turn shares a content word with the question (speaker names and stop
                     words aside, plurals and -ed/-ing folded)
    caption_only     the only words shared are in a gold turn's image caption
    other            shares words, ranked below 10 or not recalled at all

Further flags: ``image`` (a gold turn carries a caption), ``same_session`` (a gold turn is in the session
of a recalled one), ``names_date`` (the question names a month, a year, a weekday or a relative day),
``asks_when`` (it asks when or how long), ``several_gold`` (two or more gold turns). Nothing here
prints the data: only counts leave this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from benchmarks.locomo_data import Conversation, Question, Turn

SPAN = 2
KINDS = ("unstored", "neighbour", "near", "no_shared_words", "caption_only", "other")
FLAGS = ("image", "same_session", "names_date", "asks_when", "several_gold")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP = frozenset(
    re.findall(
        r"\S+",
        """a about above after again all also am an and any are as at be been before being both but by can
    could did do does doing done for from get got had has have having he her hers herself him himself his
    how i if in into is it its itself just like me more most much my no nor not now of off on once only or
    other our ours out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself ever kind sort type thing things one ones
    many lot lots way ways really did didn't does doesn't it's i'm""",
    )
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS})\b|\b(?:19|20)\d\d\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
    r"|\b(?:yesterday|today|tomorrow|weekend)\b|\b(?:last|next|this|past) (?:week|month|year|night)\b"
    r"|\b(?:week|month|year)s? (?:ago|before|after)\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"^\s*(?:when\b|how long\b|what (?:year|month|date|day|time)\b|in which (?:year|month)\b)", re.I
)


def content_words(text: str, names: Iterable[str] = ()) -> frozenset[str]:
    """Return the folded content words of ``text``: no stop words, no ``names``, simple suffixes removed."""
    skip = _STOP | {n.lower() for n in names}
    words = set()
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s")
        if word in skip or len(word) < 2:
            continue
        words.add(_fold(word))
    return frozenset(words)


def _fold(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def classify(
    question: Question,
    conv: Conversation,
    ranked: Sequence[Sequence[Turn]],
    k: int = 5,
) -> tuple[str, frozenset[str]] | None:
    """Return the primary kind and the flags of a miss at ``k``, or None when a gold turn is in the first ``k``.

    ``ranked`` lists, best first, the turns each recalled memory holds (a duplicate memory holds several).
    """
    gold = set(question.gold)
    first = next((rank for rank, turns in enumerate(ranked, 1) if any(t.dia_id in gold for t in turns)), None)
    if first is not None and first <= k:
        return None
    by_id = {turn.dia_id: turn for turn in conv.turns}
    gold_turns = [by_id[g] for g in question.gold if g in by_id]
    top = [turn for turns in ranked[:k] for turn in turns]
    names = {turn.speaker for turn in conv.turns}
    asked = content_words(question.text, names)
    in_text = any(asked & content_words(f"{t.text}", names) for t in gold_turns)
    in_caption = any(asked & content_words(t.caption, names) for t in gold_turns)
    flags = set()
    if any(t.caption for t in gold_turns):
        flags.add("image")
    if any(g.session == t.session for g in gold_turns for t in top):
        flags.add("same_session")
    if _DATE.search(question.text):
        flags.add("names_date")
    if _WHEN.search(question.text):
        flags.add("asks_when")
    if len(question.gold) > 1:
        flags.add("several_gold")
    near_turn = any(
        g.session == t.session and abs(g.position - t.position) <= SPAN for g in gold_turns for t in top
    )
    if not gold_turns:
        kind = "unstored"
    elif near_turn:
        kind = "neighbour"
    elif first is not None and first <= 10:
        kind = "near"
    elif not in_text and not in_caption:
        kind = "no_shared_words"
    elif not in_text:
        kind = "caption_only"
    else:
        kind = "other"
    return kind, frozenset(flags)
