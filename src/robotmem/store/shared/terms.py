"""FTS5's term rules, for both engines: the tokenizer the SQLite index uses, and FTS5 itself asked (through an
in-memory table) which terms it makes of a token, so PostgreSQL's stored terms and the in-process BM25
postings are exactly the SQLite index's."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

# Porter over unicode61, diacritics folded; '_' and '.' kept inside tokens (grip_force, 12.5).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars '_.'"

_VERBATIM = re.compile(r"[0-9][0-9._]*")


class Stemmer:
    """FTS5's own tokenizer, asked through an in-memory FTS5 table: token → the terms FTS5 indexes."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f'CREATE VIRTUAL TABLE probe USING fts5(body, tokenize = "{FTS_TOKENIZER}")')
        self._conn.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')")
        self._known: dict[str, tuple[str, ...]] = {}
        self._guard = threading.Lock()

    def terms(self, tokens: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Return token → its FTS5 terms for every token of ``tokens``."""
        wanted = set(tokens)
        with self._guard:
            unknown = [t for t in wanted if t not in self._known]
            if unknown:
                self._resolve(unknown)
            return {t: self._known[t] for t in wanted}

    def _resolve(self, tokens: list[str]) -> None:
        if len(self._known) > 1_000_000:
            self._known.clear()
        # Digits with '.'/'_' inside (readings, ids, 12.5) are one term, unchanged by the tokenizer.
        for token in tokens:
            if _VERBATIM.fullmatch(token):
                self._known[token] = (token,)
        tokens = [t for t in tokens if t not in self._known]
        if tokens:
            self._resolve_with_fts(tokens)

    def _resolve_with_fts(self, tokens: list[str]) -> None:
        found: dict[int, list[str]] = {i: [] for i in range(len(tokens))}
        with self._conn:
            self._conn.executemany("INSERT INTO probe (rowid, body) VALUES (?, ?)", enumerate(tokens))
            for term, doc in self._conn.execute("SELECT term, doc FROM probe_terms ORDER BY doc, offset"):
                found[doc].append(term)
            self._conn.execute("DELETE FROM probe")
        for i, token in enumerate(tokens):
            self._known[token] = tuple(found[i])

    def close(self) -> None:
        self._conn.close()


_SHARED: list[Stemmer] = []
_SHARED_GUARD = threading.Lock()


def shared_stemmer() -> Stemmer:
    """Return the process's one ``Stemmer`` for code that has no mirror (BM25 scored on SQL matches)."""
    with _SHARED_GUARD:
        if not _SHARED:
            _SHARED.append(Stemmer())
        return _SHARED[0]
