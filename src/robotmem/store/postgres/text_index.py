"""The text index on PostgreSQL: FTS5's own terms in a ``tsvector``, scored with FTS5's BM25.

PostgreSQL has no parser for Chinese, and its English stemmer is not FTS5's, so the terms are made in
Python exactly as the SQLite engine's FTS5 makes them (``text.index_text`` segments CJK, then FTS5's
``porter unicode61`` tokenizer, asked through ``store.shared.terms``) and stored as a
``tsvector`` whose positions count each term. ``fts_terms`` keeps each term's document count and
``fts_totals`` the documents and tokens, so BM25 uses the statistics FTS5 uses: the same scores.

Every write to ``memory_terms`` goes through ``add``/``remove``/``replace``/``rebuild`` here, which keep
those counts in step. (A row changes only with its memory's content or status, whose own change the
change log records; ``rebuild`` changes no memory and bumps ``meta.fts_epoch`` instead.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from robotmem.store.shared.rows import batches
from robotmem.store.shared.terms import shared_stemmer
from robotmem.text.tokens import number_terms

_MIN_IDF = 1e-6
_MAX_POSITION = 16383  # tsvector positions stop there
_MAX_LEXEME_BYTES = 2046


def query_terms(words: Sequence[str]) -> list[str]:
    """Return the FTS5 terms of query ``words`` (or of a body's whitespace tokens), in order, a word listed
    twice counting twice.

    A word FTS5 splits into several terms (a phrase there) contributes each of them.
    """
    by_word = shared_stemmer().terms(words)
    return [term for word in words for term in by_word[word] if term]


def _quoted(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(terms: Sequence[str]) -> str:
    """Return the ``tsvector`` text of ``terms``: each term with the positions it holds."""
    positions: dict[str, list[int]] = {}
    for index, term in enumerate(terms, start=1):
        if len(term.encode("utf-8")) <= _MAX_LEXEME_BYTES:
            positions.setdefault(term, []).append(min(index, _MAX_POSITION))
    return " ".join(
        f"{_quoted(term)}:{','.join(str(p) for p in sorted(set(found)))}" for term, found in positions.items()
    )


def or_query(terms: Iterable[str]) -> str | None:
    """Return the ``tsquery`` text matching any of ``terms`` (None when there is none)."""
    unique = list(dict.fromkeys(t for t in terms if t))
    return " | ".join(_quoted(t) for t in unique) or None


def numbers_query(text: str) -> str | None:
    """Return the ``tsquery`` of ``text.numbers_query``: texts holding the same two longest numbers."""
    parts = [f"({_quoted(digits)} | {_quoted(prefix)}:*)" for digits, prefix in number_terms(text)]
    return " & ".join(parts) or None


@dataclass(frozen=True, slots=True)
class Encoded:
    """One body's index entry: the ``tsvector`` text, its length in terms, and its distinct terms."""

    vector: str
    length: int
    distinct: frozenset[str]
    terms: tuple[str, ...]


def encode(body: str) -> Encoded:
    """Return the index entry of an indexed body (``text.index_text`` of a memory's content)."""
    terms = query_terms(body.split())
    return Encoded(tsvector_literal(terms), len(terms), frozenset(terms), tuple(terms))


def insert(
    conn: psycopg.Connection, ids: Sequence[int], collections: Sequence[str], entries: Sequence[Encoded]
) -> None:
    """Write the index rows of new memories (one statement) and count them."""
    if not ids:
        return
    conn.execute(
        "INSERT INTO memory_terms (memory_id, collection, term_count, term_list, terms) "
        "SELECT m, c, n, string_to_array(l, ' '), v::tsvector "  # terms never hold a space
        "FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::text[], %s::text[]) AS x(m, c, n, l, v)",
        (
            list(ids),
            list(collections),
            [e.length for e in entries],
            [" ".join(e.terms) for e in entries],
            [e.vector for e in entries],
        ),
    )
    _count(conn, [e.distinct for e in entries], sum(e.length for e in entries), sign=1)


def add(conn: psycopg.Connection, rows: Iterable[tuple[int, str]]) -> None:
    """Index ``(memory_id, body)`` rows of memories that have no index row yet."""
    documents = [(memory_id, encode(body)) for memory_id, body in rows]
    if not documents:
        return
    ids = [memory_id for memory_id, _ in documents]
    found: dict[int, str] = dict(
        conn.execute("SELECT id, collection FROM memories WHERE id = ANY(%s)", (ids,)).fetchall()
    )
    kept = [(m, e) for m, e in documents if m in found]
    insert(conn, [m for m, _ in kept], [found[m] for m, _ in kept], [e for _, e in kept])


def remove(conn: psycopg.Connection, ids: Sequence[int]) -> None:
    """Take the memories ``ids`` out of the index (nothing happens for ids without a row)."""
    if not ids:
        return
    rows = conn.execute(
        "DELETE FROM memory_terms WHERE memory_id = ANY(%s) RETURNING memory_id, term_count, tsvector_to_array(terms)",
        (list(ids),),
    ).fetchall()
    if not rows:
        return
    _count(conn, [lexemes for _, _, lexemes in rows], sum(int(r[1]) for r in rows), sign=-1)


def replace(conn: psycopg.Connection, memory_id: int, body: str | None) -> None:
    """Index ``memory_id`` with ``body`` from now on (None: take it out)."""
    remove(conn, [memory_id])
    if body is not None:
        add(conn, [(memory_id, body)])


def rebuild(conn: psycopg.Connection, rows: Iterable[tuple[int, str]]) -> int:
    """Drop every memory's terms and index ``(memory_id, body)`` rows anew; return how many were indexed."""
    conn.execute("DELETE FROM memory_terms")
    conn.execute("DELETE FROM fts_terms")
    conn.execute("UPDATE fts_totals SET docs = 0, tokens = 0")
    # No memory row changes, so the change log says nothing: a new epoch tells every process's copy
    # of the postings (``postings.TextPostings``) to load them again.
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('fts_epoch', '1') "
        "ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text"
    )
    count = 0
    for batch in batches(rows, 500):
        add(conn, batch)
        count += len(batch)
    return count


def _count(conn: psycopg.Connection, documents: Sequence[Iterable[str]], tokens: int, sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) ``documents`` (each one's distinct terms), of ``tokens`` terms in
    all, in the BM25 statistics."""
    counts: Counter[str] = Counter()
    for terms in documents:
        counts.update(terms)
    # Sorted, so that two writers never wait on each other's rows in opposite orders.
    ordered = sorted(counts)
    if ordered:
        conn.execute(
            "INSERT INTO fts_terms (term, docs) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
            "ON CONFLICT (term) DO UPDATE SET docs = fts_terms.docs + EXCLUDED.docs",
            (ordered, [sign * counts[t] for t in ordered]),
        )
    if ordered and sign < 0:
        conn.execute("DELETE FROM fts_terms WHERE term = ANY(%s) AND docs <= 0", (ordered,))
    conn.execute(
        "UPDATE fts_totals SET docs = docs + %s, tokens = tokens + %s", (sign * len(documents), sign * tokens)
    )


@dataclass(frozen=True, slots=True)
class Statistics:
    """What BM25 needs beyond a document: rows, mean length, and each query term's IDF."""

    documents: int
    average_length: float
    idf: dict[str, float]


def statistics(conn: psycopg.Connection, terms: Sequence[str]) -> Statistics:
    """Return FTS5's BM25 statistics for ``terms`` over every indexed memory."""
    docs, tokens = conn.execute("SELECT docs, tokens FROM fts_totals").fetchone() or (0, 0)
    found: dict[str, Any] = dict(
        conn.execute(
            "SELECT term, docs FROM fts_terms WHERE term = ANY(%s)", (list(dict.fromkeys(terms)),)
        ).fetchall()
    )
    rows = float(docs)
    idf: dict[str, float] = {}
    for term in terms:
        hits = float(found.get(term, 0))
        value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
        idf[term] = value if value > 0 else _MIN_IDF
    return Statistics(int(docs), float(tokens) / rows if rows > 0 else 0.0, idf)


def document_counts(conn: psycopg.Connection, terms: Sequence[str]) -> dict[str, int]:
    """Return term → the number of indexed memories holding it (0 for unknown terms)."""
    found: dict[str, Any] = dict(
        conn.execute("SELECT term, docs FROM fts_terms WHERE term = ANY(%s)", (list(terms),)).fetchall()
    )
    return {term: int(found.get(term, 0)) for term in terms}
