"""Calendar dates a query names, and the date a memory's context gives it (pure functions).

A question such as "What did the arm pick on 14 March, 2024?" or "What failed in May 2024?" names a day or a
month; a memory stored from a log carries when it happened in its context (``date``), in whatever form
the log wrote it: ``2024-03-14``, ``2024-03-14T08:05:00Z``, ``8:05 am on 14 March, 2024``, ``March 14, 2024``.
Recall raises the memories whose date falls in a span the query names (``date_boost``).

``named_spans`` reads, in English, a day (``14 March 2024``, ``14th of March, 2024``, ``March 14, 2024``,
``2024-03-14``) or a month (``March 2024``, ``2024-03``); a bare year or a relative day ("last Saturday")
names no span: it is either too wide to tell memories apart or needs a reference date the query does not
give. ``written_date`` reads the same forms, first match, in a context value. A day span reaches
``SLACK_DAYS`` after the day: a log written the next day tells of it as "yesterday".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

SLACK_DAYS = 1
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# Most specific first: a day is read before the month it lies in.
_DAY_FORMS = (
    re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?![\d])"),
)
_MONTH_FORMS = (
    re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE),
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)(?![\d-])"),
)
SCAN_CHARS = 400


@dataclass(frozen=True, slots=True)
class Span:
    """The days from ``first`` to ``last``, both included."""

    first: dt.date
    last: dt.date

    def holds(self, day: dt.date) -> bool:
        """Whether ``day`` falls within the span."""
        return self.first <= day <= self.last


def _month_number(text: str) -> int:
    return int(text) if text.isdigit() else _MONTHS[text.lower().rstrip(".")]


def _day(match: re.Match[str]) -> dt.date | None:
    try:
        return dt.date(int(match["year"]), _month_number(match["month"]), int(match["day"]))
    except ValueError:  # 31 February, month 13
        return None


def _month(match: re.Match[str]) -> Span | None:
    year, month = int(match["year"]), _month_number(match["month"])
    if not 1 <= month <= 12:
        return None
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    return Span(dt.date(year, month, 1), following - dt.timedelta(days=1))


def named_spans(query: str) -> list[Span]:
    """Return the day and month spans ``query`` names, in order of appearance, without repeats."""
    text = query[:SCAN_CHARS]
    found: list[tuple[int, Span]] = []
    taken: list[tuple[int, int]] = []
    for form in _DAY_FORMS:
        for match in form.finditer(text):
            day = _day(match)
            if day is not None:
                found.append((match.start(), Span(day, day + dt.timedelta(days=SLACK_DAYS))))
                taken.append(match.span())
    for form in _MONTH_FORMS:
        for match in form.finditer(text):
            inside = any(start <= match.start() < end for start, end in taken)
            span = None if inside else _month(match)
            if span is not None:
                found.append((match.start(), span))
    ordered = [span for _, span in sorted(found, key=lambda item: item[0])]
    return list(dict.fromkeys(ordered))


def written_date(text: str) -> dt.date | None:
    """Return the first calendar day written in ``text`` (the forms of ``named_spans``), else None."""
    best: tuple[int, dt.date] | None = None
    for form in _DAY_FORMS:
        match = form.search(text[:SCAN_CHARS])
        day = _day(match) if match else None
        if match and day is not None and (best is None or match.start() < best[0]):
            best = (match.start(), day)
    return None if best is None else best[1]


def matches_any(spans: list[Span], day: dt.date | None) -> bool:
    """Whether ``day`` falls within one of ``spans`` (never for an unknown day)."""
    return day is not None and any(span.holds(day) for span in spans)
