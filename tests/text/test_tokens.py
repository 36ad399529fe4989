"""Tokenisation, FTS query building and number extraction."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import examples, unicode_text

from robotmem.store.shared.terms import FTS_TOKENIZER
from robotmem.text.tokens import (
    content_hash,
    fts_query,
    index_text,
    jaccard,
    numbers,
    numbers_query,
    tokens,
    word_set,
)


def test_chinese_is_segmented_into_words() -> None:
    words = tokens("机器人抓取杯子时夹爪力度设为12.5牛最好")
    assert "杯子" in words and "抓取" in words and "12.5" in words


def test_index_adds_sub_words_and_compound_parts() -> None:
    indexed = index_text("机器人 grip_force=12.5N").split()
    assert {"机器人", "机器", "grip_force", "grip", "force", "12.5n", "12.5"} <= set(indexed)


def test_fts_query_quotes_operators_and_drops_stopwords() -> None:
    assert fts_query('the NEAR "AND" * : ( ) -') == '"near"'
    assert fts_query("杯子") == '"杯子"'
    assert fts_query("   ") is None


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=60))
def test_any_query_is_valid_fts5(query: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(f'CREATE VIRTUAL TABLE f USING fts5(body, tokenize = "{FTS_TOKENIZER}")')
    conn.execute("INSERT INTO f (rowid, body) VALUES (1, ?)", (index_text(query) or "x",))
    match = fts_query(query)
    if match is not None:
        rows = conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (match,)).fetchall()
        assert rows == [(1,)] or not index_text(query)


def test_numbers_are_normalised() -> None:
    assert numbers("Episode 3: reward=-50, 12.50 N, +7") == ("3", "-50", "12.5", "7")


def test_hash_ignores_case_width_and_spacing() -> None:
    assert content_hash("Grip  Force ＯＫ") == content_hash("grip force ok")


def test_jaccard_ignores_punctuation() -> None:
    assert jaccard(word_set("close the gripper, slowly!"), word_set("Close the gripper slowly")) == 1.0


number_texts = st.lists(
    st.one_of(
        st.sampled_from(["grip", "force", "_x", "a.", "机器人", "+", "-", "=", "ß", ".", "e", "ͅ", "・"]),
        st.from_regex(r"[+-]?[0-9]{1,3}(\.[0-9]{1,4})?[a-z_]?", fullmatch=True),
        unicode_text,
    ),
    min_size=1,
    max_size=8,
).map(lambda parts: "".join(parts) if len(parts) % 2 else " ".join(parts))


@settings(max_examples=examples(300), deadline=None)
@given(number_texts)
def test_every_text_with_the_same_numbers_matches_the_numbers_query(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(f'CREATE VIRTUAL TABLE f USING fts5(body, tokenize = "{FTS_TOKENIZER}")')
    conn.execute("INSERT INTO f (rowid, body) VALUES (1, ?)", (index_text(text) or "x",))
    written_again = "value " + " ".join(numbers(text))  # another text with the same numbers

    assert numbers(written_again) == numbers(text)
    match = numbers_query(written_again)
    if match is not None:
        assert conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (match,)).fetchall() == [(1,)]
