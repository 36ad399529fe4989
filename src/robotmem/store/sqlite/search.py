"""Search queries: BM25 over FTS5 and id selection under a compiled filter predicate.

``predicate`` is a boolean SQL expression over ``memories m`` built by ``robotmem.query.filters`` and the
recall planner; ``params`` are its named parameters.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from robotmem.store.shared.terms import shared_stemmer
from robotmem.store.sqlite.filters import json_path
from robotmem.text.tokens import fts_query, or_match, word_set

# Words of plain ASCII letters, digits, '_' and '.' give the same FTS tokens alone as inside a sentence
# (CJK segmentation may differ), so only they are used as probe words.
_PROBE_WORD = re.compile(r"[0-9a-z_.]+")
_DF_CAP = 100


def search_fts(
    conn: sqlite3.Connection, match: str, predicate: str, params: dict[str, Any], limit: int
) -> list[tuple[int, float]]:
    """Return up to ``limit`` ``(id, bm25)`` pairs best first (lower bm25 is better) among rows passing ``predicate``."""
    sql = (
        "SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
        f"WHERE memories_fts MATCH :fts_match AND {predicate} ORDER BY rank LIMIT :fts_limit"
    )
    return [
        (int(r[0]), float(r[1]))
        for r in conn.execute(sql, {**params, "fts_match": match, "fts_limit": limit})
    ]


def jaccard_candidates(
    conn: sqlite3.Connection, text: str, predicate: str, params: dict[str, Any], limit: int, threshold: float
) -> list[tuple[int, float]]:
    """Return ``search_fts`` results for ``text`` restricted to rows that can reach word Jaccard ≥ ``threshold``.

    A text with Jaccard ≥ ``threshold`` to one with words W misses at most ⌊(1 − threshold)·|W|⌋ of them,
    so it contains one of any ⌊(1 − threshold)·|W|⌋ + 1 words of W. Requiring one of the rarest that many
    (AND-ed with the OR of all words, which still ranks) spares scoring every row that shares only common
    words, and loses no possible duplicate. Falls back to the plain OR query when too few words qualify.
    """
    match = fts_query(text)
    if match is None:
        return []
    words = sorted(word_set(text))
    needed = math.floor((1.0 - threshold) * len(words)) + 1
    probes = {w: q for w in words if _PROBE_WORD.fullmatch(w) and (q := fts_query(w)) is not None}
    if not 0.0 < threshold <= 1.0 or len(probes) < needed:
        return search_fts(conn, match, predicate, params, limit)
    counts = {
        w: int(
            conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH :q LIMIT :cap)",
                {"q": q, "cap": _DF_CAP},
            ).fetchone()[0]
        )
        for w, q in probes.items()
    }
    rarest = sorted(probes, key=lambda w: (counts[w], w))[:needed]
    if all(counts[w] == 0 for w in rarest):
        return []  # no stored row holds any of them, so none can be a duplicate
    probe = " OR ".join(f"({probes[w]})" for w in rarest)
    return search_fts(conn, f"({match}) AND ({probe})", predicate, params, limit)


def id_chunks(ids: Sequence[int], size: int = 900) -> Iterator[tuple[str, dict[str, int]]]:
    """Yield ``(marks, params)`` for ``m.id IN (marks)`` over ``ids``, ``size`` at a time (SQLite's bound)."""
    for start in range(0, len(ids), size):
        keyed = {f"id{i}": memory_id for i, memory_id in enumerate(ids[start : start + size])}
        yield ",".join(":" + key for key in keyed), keyed


def passing(conn: sqlite3.Connection, ids: Sequence[int], predicate: str, params: dict[str, Any]) -> set[int]:
    """Return the ids among ``ids`` whose rows pass ``predicate``."""
    found: set[int] = set()
    for marks, keyed in id_chunks(ids):
        sql = f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND {predicate}"
        found.update(int(r[0]) for r in conn.execute(sql, {**params, **keyed}))
    return found


def _varint(blob: bytes) -> int:
    """Return the first SQLite varint of ``blob`` (FTS5 writes a row's token count so)."""
    value = 0
    for i, byte in enumerate(blob[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def bm25_matches(
    conn: sqlite3.Connection,
    words: Sequence[str],
    predicate: str,
    params: dict[str, Any],
    k1: float,
    b: float,
    min_coverage: float,
) -> dict[int, float] | None:
    """Return id → BM25 with constants ``k1`` and ``b`` of every row passing ``predicate`` that matches a word.

    The same formula and statistics as FTS5's ``bm25()`` and ``lexical.LexicalIndex`` (rows, their token
    counts and each word's document count over the whole index), with ``min_coverage`` as there. Returns
    None when a word is not one FTS5 term (FTS5 would search it as a phrase).
    """

    stemmer = shared_stemmer()
    terms = stemmer.terms(words)
    if any(len(terms[w]) != 1 for w in words):
        return None
    sizes = conn.execute("SELECT sz FROM memories_fts_docsize").fetchall()
    rows = float(len(sizes))
    if rows == 0:
        return {}
    average = sum(_varint(bytes(sz)) for (sz,) in sizes) / rows
    idfs: list[float] = []
    for word in words:
        hits = float(
            conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH :q", {"q": or_match([word])}
            ).fetchone()[0]
        )
        idf = math.log((rows - hits + 0.5) / (hits + 0.5))
        idfs.append(idf if idf > 0 else 1e-6)
    wanted = [terms[w][0] for w in words]
    sql = (
        "SELECT m.id, memories_fts.body FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
        f"WHERE memories_fts MATCH :fts_match AND {predicate}"
    )
    found: dict[int, float] = {}
    mass = sum(idfs)
    for memory_id, body in conn.execute(sql, {**params, "fts_match": or_match(words)}):
        tokens = (body or "").split()
        by_token = stemmer.terms(tokens)
        doc_terms = [term for token in tokens for term in by_token[token]]
        length = float(len(doc_terms))
        score, covered = 0.0, 0.0
        for term, idf in zip(wanted, idfs, strict=True):
            freq = float(doc_terms.count(term))
            if freq > 0:
                score += idf * freq * (k1 + 1.0) / (freq + k1 * (1.0 - b + b * length / average))
                covered += idf
        if covered > 0 and (min_coverage <= 0 or covered >= min_coverage * mass - 1e-12):
            found[int(memory_id)] = score
    return found


def session_members(
    conn: sqlite3.Connection,
    ids: Sequence[int],
    predicate: str,
    params: dict[str, Any],
) -> list[list[int]]:
    """Return the ids passing ``predicate`` of each session holding one of ``ids``, each in time order
    (``julianday(created_at)``, ties by id).

    Sessions come in order of their smallest id; memories without a session belong to none.
    """
    sessions: set[str] = set()
    for marks, keyed in id_chunks(ids):
        sql = f"SELECT DISTINCT session_id FROM memories WHERE id IN ({marks}) AND session_id IS NOT NULL"
        sessions.update(str(r[0]) for r in conn.execute(sql, keyed))
    members: dict[str, list[int]] = {}
    names = sorted(sessions)
    for start in range(0, len(names), 900):
        chunk = {f"session{i}": name for i, name in enumerate(names[start : start + 900])}
        marks = ", ".join(f":{key}" for key in chunk)
        sql = (
            f"SELECT m.id, m.session_id FROM memories m WHERE m.session_id IN ({marks}) AND {predicate} "
            "ORDER BY m.session_id, julianday(m.created_at), m.id"
        )
        for memory_id, session in conn.execute(sql, {**params, **chunk}):
            members.setdefault(str(session), []).append(int(memory_id))
    return sorted(members.values(), key=min)


def coordinates(
    conn: sqlite3.Connection, path: Sequence[str], predicate: str, params: dict[str, Any]
) -> dict[int, Any]:
    """Return id → the JSON value at context ``path`` for rows passing ``predicate`` that have it."""
    sql = (
        "SELECT m.id, json_extract(m.context, :spatial_path) FROM memories m "
        f"WHERE {predicate} AND json_type(m.context, :spatial_path) IN ('array', 'object')"
    )
    out: dict[int, Any] = {}
    for memory_id, raw in conn.execute(sql, {**params, "spatial_path": json_path(path)}):
        try:
            out[int(memory_id)] = json.loads(raw)
        except (TypeError, ValueError):
            continue
    return out
