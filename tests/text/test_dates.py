"""Dates a query names and dates written in a memory's context (robotmem.text.dates)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotmem.text.dates import SLACK_DAYS, Span, matches_any, named_spans, written_date

DAY = dt.date(2024, 3, 14)
MARCH = Span(dt.date(2024, 3, 1), dt.date(2024, 3, 31))
NEXT = Span(DAY, DAY + dt.timedelta(days=SLACK_DAYS))
MONTH_NAMES = [dt.date(2000, m, 1).strftime("%B") for m in range(1, 13)]
days = st.dates(dt.date(1900, 1, 1), dt.date(2099, 12, 31))


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("What did the arm pick on 14 March, 2024?", [NEXT]),
        ("what happened on the 14th of March 2024", [NEXT]),
        ("the run of March 14, 2024", [NEXT]),
        ("the run of Mar. 14 2024", [NEXT]),
        ("grasp failures on 2024-03-14", [NEXT]),
        ("2024-03-14T08:05:00Z", [NEXT]),
        ("What failed in March 2024?", [MARCH]),
        ("what failed in march, 2024", [MARCH]),
        ("the logs of 2024-03", [MARCH]),
        ("between 14 March 2024 and April 2024", [NEXT, Span(dt.date(2024, 4, 1), dt.date(2024, 4, 30))]),
        ("in March 2024, and again on 14 March 2024 in March 2024", [MARCH, NEXT]),
    ],
)
def test_a_named_day_or_month_is_read(query: str, spans: list[Span]) -> None:
    assert named_spans(query) == spans


@pytest.mark.parametrize(
    "query",
    [
        "When did the gripper slip on the mug?",  # asks when: names no date
        "What did she do last Saturday?",  # relative: no reference day in the query
        "What did the arm do in 2024?",  # a year alone is too wide to tell memories apart
        "You may 2 a.m. be right",
        "the run of 2024-13-01",  # no such month
        "grip_force=12.5 N at 20240314",
    ],
)
def test_no_span_is_read_where_none_is_named(query: str) -> None:
    assert named_spans(query) == []


@given(days, st.sampled_from(["{d} {M}, {y}", "{M} {d}, {y}", "{y}-{m:02d}-{d:02d}", "{d}th of {M} {y}"]))
def test_a_written_day_is_read_back_and_falls_in_its_own_span(day: dt.date, form: str) -> None:
    text = "4:10 pm on " + form.format(d=day.day, m=day.month, y=day.year, M=MONTH_NAMES[day.month - 1])
    assert written_date(text) == day
    spans = named_spans(f"what happened on {text}?")
    assert matches_any(spans, day)
    assert not matches_any(spans, day - dt.timedelta(days=1))
    assert matches_any(spans, day + dt.timedelta(days=SLACK_DAYS))  # told of the next day as "yesterday"


@given(days)
def test_a_named_month_holds_exactly_its_days(day: dt.date) -> None:
    (span,) = named_spans(f"in {MONTH_NAMES[day.month - 1]} {day.year}")
    assert span.holds(day)
    assert span.first.day == 1 and span.first.month == day.month
    assert (span.last + dt.timedelta(days=1)).month != day.month


@given(st.text(max_size=500))
def test_reading_any_text_never_fails(text: str) -> None:
    for span in named_spans(text):
        assert span.first <= span.last
    written_date(text)


def test_a_day_that_does_not_exist_still_names_its_month() -> None:
    assert named_spans("on 31 February 2025") == [Span(dt.date(2025, 2, 1), dt.date(2025, 2, 28))]


def test_an_unknown_day_matches_nothing() -> None:
    assert not matches_any([MARCH], None)
    assert not matches_any([], DAY)
    assert written_date("no date here, only 2024") is None
