"""Porter (FTS5's stemmer) against Snowball English on the words of both labelled sets.

    pip install snowballstemmer        # or: pip install -e '.[dev]'
    python -m benchmarks.stemming

FTS5 indexes memories with ``porter unicode61``. Snowball English ("Porter2") fixes some of Porter's
conflations and misses; whether switching would matter here is measured, not assumed:

1. every word of the documents (``text.index_text``) and of the queries (the BM25 query words) of
   ``robot_eval.jsonl`` and ``episode_eval.jsonl`` is stemmed both ways — Porter by asking FTS5 itself, Snowball
   only where it applies (words of ASCII letters; numbers, ``grip_force``, CJK words are left as FTS5 has them);
2. for each query word, the documents holding a word with the same stem are found under either stemmer; the
   query words whose documents differ are listed;
3. BM25-only retrieval (FTS5's formula, the shipped ``bm25_k1`` / ``bm25_b``, one index per collection as recall
   searches one collection) is scored both ways: recall@5 and MRR per set.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from benchmarks.harness import ROOT, markdown_table

from robotmem.config import Settings
from robotmem.evaluation import EvalSet, load_eval_set, score_run
from robotmem.query.bm25 import LexicalIndex
from robotmem.service.recall.scoring import bm25_words
from robotmem.store.shared.terms import Stemmer
from robotmem.text.tokens import index_text

SETS = {
    "robot": ROOT / "benchmarks" / "data" / "robot_eval.jsonl",
    "episode": ROOT / "benchmarks" / "data" / "episode_eval.jsonl",
}


def _snowball() -> Callable[[str], str]:
    try:
        import snowballstemmer  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise SystemExit(
            "snowballstemmer is not installed: pip install snowballstemmer (or '.[dev]')"
        ) from None
    stemmer = snowballstemmer.stemmer("english")
    return lambda word: str(stemmer.stemWord(word))


def stemmers(words: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Return word → term under FTS5's Porter and under Snowball where it applies (else FTS5's term)."""
    fts = Stemmer()
    try:
        terms = fts.terms(words)
    finally:
        fts.close()
    snowball = _snowball()
    porter = {w: " ".join(terms[w]) for w in words}
    snow = {w: snowball(w) if w.isascii() and w.isalpha() else porter[w] for w in words}
    return porter, snow


def _bm25(
    eval_set: EvalSet, documents: dict[str, list[str]], queries: dict[str, list[str]], term: dict[str, str]
) -> dict[str, float]:
    settings = Settings()
    by_collection: dict[str | None, list[str]] = defaultdict(list)
    for d in eval_set.documents:
        by_collection[d.collection if all(q.collection for q in eval_set.queries) else None].append(d.id)
    rankings: dict[str, list[str]] = {}
    for collection, ids in by_collection.items():
        index = LexicalIndex()
        index.build((i, [term[w] for w in documents[d]]) for i, d in enumerate(ids))
        for q in eval_set.queries:
            if (q.collection if collection is not None else None) != collection:
                continue
            scores, matched = index.score(
                [term[w] for w in queries[q.id]], 0.0, settings.recall.bm25_k1, settings.recall.bm25_b
            )
            found = np.flatnonzero(matched[: len(ids)])
            order = found[np.lexsort((found, -scores[found]))][:10]
            rankings[q.id] = [ids[i] for i in order]
    result = score_run(eval_set, rankings, ks=(1, 5, 10))
    return {k: float(v) for k, v in result.items() if k in ("recall@5", "mrr")}


def measure(log: Callable[[str], None] = print) -> dict[str, Any]:
    sets = {name: load_eval_set(path) for name, path in SETS.items()}
    documents = {(name, d.id): index_text(d.text).split() for name, s in sets.items() for d in s.documents}
    queries = {(name, q.id): bm25_words(q.query, "basic") for name, s in sets.items() for q in s.queries}
    words = {w for tokens in [*documents.values(), *queries.values()] for w in tokens}
    porter, snow = stemmers(words)
    differ = sorted(w for w in words if w.isascii() and w.isalpha() and porter[w] != snow[w])
    # Words grouped by stem: a word whose group differs matches other words under one stemmer.
    groups: dict[str, dict[str, set[str]]] = {"porter": defaultdict(set), "snowball": defaultdict(set)}
    for w in words:
        groups["porter"][porter[w]].add(w)
        groups["snowball"][snow[w]].add(w)
    regrouped = sorted(w for w in words if groups["porter"][porter[w]] != groups["snowball"][snow[w]])
    changed: list[dict[str, Any]] = []
    for name, s in sets.items():
        holding: dict[str, dict[str, set[str]]] = {"porter": defaultdict(set), "snowball": defaultdict(set)}
        for d in s.documents:
            for w in documents[(name, d.id)]:
                holding["porter"][porter[w]].add(d.id)
                holding["snowball"][snow[w]].add(d.id)
        for q in s.queries:
            for w in queries[(name, q.id)]:
                a, b = holding["porter"][porter[w]], holding["snowball"][snow[w]]
                if a != b:
                    changed.append(
                        {
                            "set": name,
                            "query": q.id,
                            "word": w,
                            "porter_only": len(a - b),
                            "snowball_only": len(b - a),
                        }
                    )
    retrieval = {}
    for name, s in sets.items():
        docs = {d.id: documents[(name, d.id)] for d in s.documents}
        asked = {q.id: queries[(name, q.id)] for q in s.queries}
        retrieval[name] = {"porter": _bm25(s, docs, asked, porter), "snowball": _bm25(s, docs, asked, snow)}
    return {
        "words": len(words),
        "stems_differ": differ,
        "regrouped": regrouped,
        "query_words_changed": changed,
        "retrieval": retrieval,
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        [f"{name}: {stemmer}", f"{scores['recall@5']:.3f}", f"{scores['mrr']:.3f}"]
        for name, by in result["retrieval"].items()
        for stemmer, scores in by.items()
    ]
    changed = result["query_words_changed"]
    lines = [
        f"{result['words']} distinct words; {len(result['stems_differ'])} English words stem differently "
        f"(the stem itself), {len(result['regrouped'])} match a different set of words: "
        f"{', '.join(result['regrouped'][:40])}",
        f"query words whose matching documents change: {len(changed)} "
        f"in {len({(c['set'], c['query']) for c in changed})} queries: "
        + ", ".join(
            f"{c['set']}/{c['query']} '{c['word']}' (+{c['snowball_only']}/-{c['porter_only']})"
            for c in changed
        ),
        "",
        markdown_table(["BM25 only (one index per collection)", "recall@5", "MRR"], rows),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    print(render(measure(log=lambda line: print(line, file=sys.stderr))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
