"""The recall channels on PostgreSQL (``robotmem.store.protocol.CandidateSource``).

Every channel runs as SQL over the scope's predicate, so a filter is applied inside the channel, before
any limit. BM25 scores FTS5's formula on the stored terms (``text_index``) and uses MaxScore to avoid
scoring every memory that shares a common word: query terms are taken rarest first, only memories
holding one of the terms taken so far are scored (fully, on every query term), and the loop stops as
soon as the ``depth``-th best score beats the most the remaining, commoner terms could add to a memory
holding none of the others. The answer is the same as scoring every match.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import psycopg

from robotmem import lexical
from robotmem.spatial import SpatialSort, coordinates_at, distance
from robotmem.store.postgres import text_index
from robotmem.store.postgres.filters import PgFilter
from robotmem.store.postgres.vectors import search_vectors
from robotmem.store.protocol import RecallScope, VectorQuery
from robotmem.text import query_tokens, word_set


def predicate(scope: RecallScope) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` for every condition of ``scope``."""
    parts = ["m.status = 'active'", "m.collection = %(p_collection)s", "m.confidence >= %(p_min_confidence)s"]
    params: dict[str, Any] = {"p_collection": scope.collection, "p_min_confidence": scope.min_confidence}
    if scope.session_id is not None:
        parts.append("m.session_id = %(p_session)s")
        params["p_session"] = scope.session_id
    if scope.exclude_session is not None:
        parts.append("(m.session_id IS NULL OR m.session_id != %(p_exclude)s)")
        params["p_exclude"] = scope.exclude_session
    if scope.filter is not None:
        builder = PgFilter()
        parts.append(builder.compile(scope.filter))
        params.update(builder.params)
    return " AND ".join(parts), params


def bm25(
    conn: psycopg.Connection,
    words: Sequence[str],
    where: str,
    params: dict[str, Any],
    depth: int,
    *,
    k1: float = lexical.K1,
    b: float = lexical.B,
    min_coverage: float = 0.0,
    required: Sequence[str] = (),
) -> list[tuple[int, float]]:
    """Return up to ``depth`` ``(id, BM25)`` of rows passing ``where`` that hold a query word, best first
    (ties by smaller id), scored as FTS5's ``bm25()`` with constants ``k1`` and ``b``.

    ``min_coverage`` > 0 leaves out rows whose words carry less than that share of the query's IDF;
    ``required`` (terms) keeps only rows holding one of them.
    """
    terms = text_index.query_terms(words)
    if not terms or depth <= 0:
        return []
    stats = text_index.statistics(conn, terms)
    if stats.documents == 0:
        return []
    idfs = [stats.idf[t] for t in terms]
    mass = sum(idfs)
    least = min_coverage * mass - 1e-12 if min_coverage > 0 else 0.0
    bound: dict[str, float] = {}
    weight: dict[str, float] = {}
    for term, idf in zip(terms, idfs, strict=True):
        bound[term] = bound.get(term, 0.0) + idf * (k1 + 1.0)  # the most a term adds, at any frequency
        weight[term] = weight.get(term, 0.0) + idf
    order = sorted(bound, key=lambda t: (-stats.idf[t], t))
    base = {
        **params,
        "q_terms": terms,
        "q_idf": idfs,
        "q_k1": k1,
        "q_b": b,
        "q_avgdl": max(stats.average_length, 1e-9),
        "q_least": least,
        "q_depth": depth,
    }
    extra = ""
    if required:
        base["q_required"] = text_index.or_query(required)
        extra = "AND m.terms @@ %(q_required)s::tsquery "
    taken = 1
    while True:
        essential, rest = order[:taken], order[taken:]
        rows = conn.execute(
            "SELECT m.id, s.score FROM memories m CROSS JOIN LATERAL ("
            " SELECT sum(q.idf * t.tf * (%(q_k1)s + 1) / (t.tf + %(q_k1)s * (1 - %(q_b)s + "
            "   %(q_b)s * m.term_count / %(q_avgdl)s))) AS score, sum(q.idf) AS covered"
            " FROM (SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf"
            "       FROM unnest(m.terms) AS u) t"
            " JOIN unnest(%(q_terms)s::text[], %(q_idf)s::float8[]) AS q(term, idf) ON q.term = t.lexeme) s "
            f"WHERE m.terms @@ %(q_match)s::tsquery {extra}AND {where} AND s.covered > 0 "
            "AND s.covered >= %(q_least)s ORDER BY s.score DESC, m.id LIMIT %(q_depth)s",
            {**base, "q_match": text_index.or_query(essential)},
        ).fetchall()
        if not rest:
            break
        # A row holding none of the terms taken scores at most the rest's bounds and covers at most
        # their weight: once that cannot reach the depth-th score (or the coverage), nothing is missed.
        ceiling = sum(bound[t] for t in rest)
        if sum(weight[t] for t in rest) < least or (len(rows) >= depth and float(rows[-1][1]) > ceiling):
            break
        taken += 1
    return [(int(m), float(score)) for m, score in rows]


def jaccard_candidates(
    conn: psycopg.Connection, text: str, where: str, params: dict[str, Any], limit: int, threshold: float
) -> list[int]:
    """Return up to ``limit`` rows passing ``where`` that share words with ``text``, best BM25 first, among
    which every row with word Jaccard ≥ ``threshold`` to ``text`` is found (see the SQLite engine's
    ``search.jaccard_candidates``: such a row holds one of the rarest ⌊(1 − threshold)·|W|⌋ + 1 words)."""
    ranked = query_tokens(text)
    words = sorted(word_set(text))
    if not ranked or not words:
        return []
    terms_of = {w: text_index.query_terms([w]) for w in words}
    needed = math.floor((1.0 - threshold) * len(words)) + 1
    probes = {w: t[0] for w, t in terms_of.items() if len(t) == 1}
    required: list[str] = []
    if 0.0 < threshold <= 1.0 and len(probes) >= needed:
        counts = text_index.document_counts(conn, list(probes.values()))
        rarest = sorted(probes, key=lambda w: (counts[probes[w]], w))[:needed]
        if all(counts[probes[w]] == 0 for w in rarest):
            return []
        required = [probes[w] for w in rarest]
    return [m for m, _ in bm25(conn, ranked, where, params, limit, required=required)]


class PgCandidates:
    """Every channel as SQL over the scope's compiled predicate."""

    def __init__(self, conn: psycopg.Connection, scope: RecallScope) -> None:
        self._conn = conn
        self.where, self.params = predicate(scope)

    def text(self, words: Sequence[str], depth: int, min_coverage: float) -> list[int]:
        return [m for m, _ in self.text_scored(words, depth, min_coverage)]

    def text_scored(
        self, words: Sequence[str], depth: int, min_coverage: float, k1: float = 1.2, b: float = 0.75
    ) -> list[tuple[int, float]]:
        return bm25(self._conn, words, self.where, self.params, depth, k1=k1, b=b, min_coverage=min_coverage)

    def vectors(self, query: VectorQuery, depth: int) -> list[int]:
        return [m for m, _ in self.vectors_scored(query, depth)]

    def vectors_scored(self, query: VectorQuery, depth: int) -> list[tuple[int, float]]:
        return search_vectors(self._conn, query, self.where, self.params, depth)

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        wanted = list(ids)
        if not wanted:
            return []
        rows = self._conn.execute(
            "SELECT m.id, m.session_id FROM memories m WHERE m.session_id IN "
            "(SELECT DISTINCT session_id FROM memories WHERE id = ANY(%(e_ids)s) AND session_id IS NOT NULL) "
            f"AND {self.where} ORDER BY m.session_id, m.created_at, m.id",
            {**self.params, "e_ids": wanted},
        )
        members: dict[str, list[int]] = {}
        for memory_id, session in rows:
            members.setdefault(str(session), []).append(int(memory_id))
        return sorted(members.values(), key=min)

    def contexts(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        found: dict[int, dict[str, Any]] = {}
        for memory_id, raw in self._conn.execute(
            "SELECT id, context::text FROM memories WHERE id = ANY(%s)", (list(ids),)
        ):
            try:
                value = json.loads(raw) if raw else {}
            except (TypeError, ValueError):
                value = {}
            found[int(memory_id)] = value if isinstance(value, dict) else {}
        return found

    def nearest(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        builder = PgFilter("s")
        point = builder.json_at(spatial.path)
        found: dict[int, float] = {}
        rows = self._conn.execute(
            f"SELECT m.id, ({point})::text FROM memories m WHERE {self.where} "
            f"AND json_typeof({point}) IN ('array', 'object')",
            {**self.params, **builder.params},
        )
        for memory_id, raw in rows:
            try:
                value = json.loads(raw)
            except (TypeError, ValueError):
                continue
            far = distance(coordinates_at({"v": value}, ("v",)), spatial.target)
            if far is not None and (spatial.max_distance is None or far <= spatial.max_distance):
                found[int(memory_id)] = far
        if len(found) <= n:
            return found
        nth = sorted(found.values())[n - 1]
        return {m: d for m, d in found.items() if d <= nth}

    def first(self, n: int, exclude: Collection[int]) -> list[int]:
        rows = self._conn.execute(
            f"SELECT m.id FROM memories m WHERE {self.where} ORDER BY m.id LIMIT %(first_limit)s",
            {**self.params, "first_limit": n + len(exclude)},
        )
        return [m for m in (int(r[0]) for r in rows) if m not in exclude][:n]

    def in_time_order(self, *, newest_first: bool, limit: int | None) -> list[int]:
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT m.id FROM memories m WHERE {self.where} ORDER BY m.created_at {order}, m.id {order}"
        bound = dict(self.params)
        if limit is not None:
            sql += " LIMIT %(select_limit)s"
            bound["select_limit"] = limit
        return [int(r[0]) for r in self._conn.execute(sql, bound)]

    def real_world(self, ids: Iterable[int]) -> set[int]:
        rows = self._conn.execute(
            "SELECT m.id FROM memories m WHERE m.id = ANY(%s) "
            "AND json_typeof(m.context -> 'env' -> 'sim_or_real') = 'string' "
            "AND rm_str(m.context -> 'env' -> 'sim_or_real') = 'real'",
            (list(ids),),
        )
        return {int(r[0]) for r in rows}

    def from_robot(self, ids: Iterable[int], robot_id: str) -> set[int]:
        rows = self._conn.execute(
            "SELECT m.id FROM memories m WHERE m.id = ANY(%s) AND m.robot_id = %s", (list(ids), robot_id)
        )
        return {int(r[0]) for r in rows}
