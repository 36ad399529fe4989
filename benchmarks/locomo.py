"""Turn-level evidence recall on LoCoMo's development half, the labelled robot and episode sets beside it.

    python -m benchmarks.locomo --data PATH [--sessions | --both] [--split tune|check|all]
        [--compare SPEC [SPEC ...]] [--no-labelled] [--cached-queries] [--misses FILE] [--out FILE]

The conversations are stored as ``benchmarks/locomo_data.py`` says (the data's own README): one memory per
turn in a real SQLite file in a temporary directory, through ``RobotMemory``, with the bundled embedder.
Every question of the chosen split then runs through ``recall`` (n = 10, its conversation's collection)
under each configuration of ``--compare`` (``"fusion=rrf,rrf_k=60"``; ``""`` = the defaults), taking turns
per question so that load on the machine falls on every configuration alike. Reported: recall_any@1/5/10
overall and per category for the ``tune`` and ``check`` conversations (fixed in
``locomo_data.SPLITS``), recall p50/p95 in ms — with the query embedding, which runs on every recall
unless ``--cached-queries`` — and the kinds of the misses at 5 (``benchmarks/locomo_misses.py``).

Beside it, unless ``--no-labelled``, each configuration is scored on ``robot_eval.jsonl`` and
``episode_eval.jsonl`` (stored once each, as ``benchmarks.ablation`` does), and a configuration that loses
more than one point of recall@5 on either against the first configuration is marked.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import CACHE, ROOT, ensure_cache, machine, markdown_table, percentile, write_json
from benchmarks.locomo_data import (
    CATEGORIES,
    SPLITS,
    CachedPassages,
    Conversation,
    Question,
    Stored,
    choose,
    load_conversations,
    split_of,
    store,
)
from benchmarks.locomo_misses import FLAGS, KINDS, classify

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders import create_embedder

KS = (1, 5, 10)
LABELLED_LOSS = 0.01  # recall@5 a configuration may lose on a labelled set before it is marked


@dataclass(frozen=True, slots=True)
class Config:
    """One ranking configuration: its label (the spec as given) and the settings it changes."""

    label: str
    changes: dict[str, str]


def parse_spec(spec: str) -> Config:
    """``"fusion=rrf,rrf_k=60"`` → the settings it changes; ``""`` = the defaults."""
    changes = {}
    for part in spec.split(","):
        if part.strip():
            key, _, value = part.partition("=")
            changes[key.strip()] = value.strip()
    return Config(spec or "defaults", changes)


@dataclass
class Answer:
    """One recall: the memory ids best first and how long the call took."""

    ranking: list[int]
    ms: float


def run_questions(
    mem: RobotMemory, base: Settings, questions: Sequence[Question], configs: Sequence[Config]
) -> dict[str, dict[str, Answer]]:
    """Recall every question under every configuration, alternating their order question by question."""
    settings = {c.label: base.replace(**c.changes) for c in configs}
    answers: dict[str, dict[str, Answer]] = {c.label: {} for c in configs}
    for number, question in enumerate(questions):
        order = list(configs) if number % 2 == 0 else list(reversed(configs))
        for config in order:
            mem.settings = settings[config.label]
            started = time.perf_counter()
            result = mem.recall(query=question.text, n=max(KS), collection=question.conv)
            elapsed = (time.perf_counter() - started) * 1000
            answers[config.label][question.id] = Answer([int(m["id"]) for m in result["memories"]], elapsed)
    mem.settings = base
    return answers


def first_gold(answer: Answer, question: Question, stored: Stored) -> int | None:
    """The 1-based rank of the first recalled memory holding a gold turn, None when none is recalled."""
    gold = set(question.gold)
    for rank, memory_id in enumerate(answer.ranking, 1):
        if any(turn.dia_id in gold for turn in stored.turns_of.get(memory_id, ())):
            return rank
    return None


def recall_scores(ranks: Sequence[int | None]) -> dict[str, float]:
    """recall_any@k for each k over the first-gold ranks of some questions."""
    count = max(1, len(ranks))
    return {f"recall@{k}": sum(1 for r in ranks if r is not None and r <= k) / count for k in KS}


def score(
    answers: dict[str, Answer], questions: Sequence[Question], stored: Stored, parts: Sequence[str]
) -> dict[str, Any]:
    """Scores of one configuration: per part (tune / check / all), overall and per category, and timings."""
    ranks = {q.id: first_gold(answers[q.id], q, stored) for q in questions}
    out: dict[str, Any] = {}
    for part in parts:
        chosen = [q for q in questions if part == "all" or split_of(q.conv) == part]
        out[part] = {
            "questions": len(chosen),
            **recall_scores([ranks[q.id] for q in chosen]),
            "by_category": {
                CATEGORIES[c]: {
                    "questions": sum(1 for q in chosen if q.category == c),
                    **recall_scores([ranks[q.id] for q in chosen if q.category == c]),
                }
                for c in CATEGORIES
            },
        }
    times = [answers[q.id].ms for q in questions]
    out["p50_ms"] = percentile(times, 0.5)
    out["p95_ms"] = percentile(times, 0.95)
    return out


def misses(
    answers: dict[str, Answer],
    questions: Sequence[Question],
    conversations: dict[str, Conversation],
    stored: Stored,
) -> list[dict[str, Any]]:
    """Every miss at 5 with its kind and flags (``locomo_misses.classify``)."""
    found = []
    for question in questions:
        answer = answers[question.id]
        ranked = [stored.turns_of.get(m, []) for m in answer.ranking]
        verdict = classify(question, conversations[question.conv], ranked)
        if verdict is not None:
            kind, flags = verdict
            found.append(
                {
                    "question": question,
                    "kind": kind,
                    "flags": sorted(flags),
                    "first_gold": first_gold(answer, question, stored),
                    "ranked": ranked,
                }
            )
    return found


def miss_counts(found: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """category → kind or flag → count (``all`` for every category)."""
    counts: dict[str, dict[str, int]] = {}
    for name in ["all", *CATEGORIES.values()]:
        rows = [m for m in found if name == "all" or CATEGORIES[m["question"].category] == name]
        counts[name] = {"misses": len(rows)}
        counts[name].update({kind: sum(1 for m in rows if m["kind"] == kind) for kind in KINDS})
        counts[name].update({flag: sum(1 for m in rows if flag in m["flags"]) for flag in FLAGS})
    return counts


def write_misses(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write the misses with their texts, for reading; refuses a path inside the repository (the licence)."""
    if path.resolve().is_relative_to(ROOT):
        raise SystemExit(
            f"--misses {path}: the data may not be copied into the repository; write it elsewhere"
        )
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def dump_rows(
    label: str, storing: str, found: Sequence[dict[str, Any]], conversations: dict[str, Conversation]
) -> list[dict[str, Any]]:
    rows = []
    for miss in found:
        question = miss["question"]
        turns = {t.dia_id: t for t in conversations[question.conv].turns}
        rows.append(
            {
                "config": label,
                "storing": storing,
                "id": question.id,
                "category": CATEGORIES[question.category],
                "question": question.text,
                "kind": miss["kind"],
                "flags": miss["flags"],
                "first_gold": miss["first_gold"],
                "gold": [
                    f"{g} (s{turns[g].session} {turns[g].date}) {turns[g].memory_text}" if g in turns else g
                    for g in question.gold
                ],
                "top5": [
                    " | ".join(f"{t.dia_id} {t.memory_text}" for t in memory) for memory in miss["ranked"][:5]
                ],
            }
        )
    return rows


def run_storing(
    conversations: Sequence[Conversation],
    asked: set[str],
    configs: Sequence[Config],
    embedder: CachedPassages,
    *,
    sessions: bool,
    parts: Sequence[str],
    log: Callable[[str], None],
    dump: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """Store the conversations one way, run the questions of ``asked`` under every configuration, score them."""
    name = "sessions" if sessions else "plain"
    questions = [q for c in conversations if c.sample_id in asked for q in c.questions]
    by_id = {c.sample_id: c for c in conversations}
    with tempfile.TemporaryDirectory(prefix="robotmem-locomo-") as home:
        base = Settings(embed_backend="auto", home=Path(home), db_path=Path(home) / f"{name}.db")
        # end_session's recall of related memories changes nothing stored but access counts, and its long
        # query costs about a second per session: it is left out while storing.
        with RobotMemory(settings=base.replace(related_top_k=0), embedder=embedder) as mem:
            stored = store(mem, conversations, sessions=sessions)
            log(
                f"  stored {name}: {len(stored.memory_of)} turns in {stored.load_s:.1f} s "
                f"({stored.duplicates} duplicates, {stored.superseded} superseded)"
            )
            mem.recall(query="warm up", collection=conversations[0].sample_id)
            started = time.perf_counter()
            answers = run_questions(mem, base, questions, configs)
            log(f"  ran {len(questions)} questions x {len(configs)} in {time.perf_counter() - started:.0f} s")
    results = {}
    for config in configs:
        found = misses(answers[config.label], questions, by_id, stored)
        results[config.label] = {**score(answers[config.label], questions, stored, parts)}
        results[config.label]["misses"] = {
            part: miss_counts([m for m in found if part == "all" or split_of(m["question"].conv) == part])
            for part in parts
        }
        if dump is not None:
            dump += dump_rows(config.label, name, found, by_id)
    unstored = sum(1 for q in questions if not any((q.conv, g) in stored.memory_of for g in q.gold))
    return {
        "storing": name,
        "turns": len(stored.memory_of),
        "duplicates": stored.duplicates,
        "superseded": stored.superseded,
        "load_s": round(stored.load_s, 1),
        "questions": len(questions),
        "questions_without_stored_gold": unstored,
        "configs": results,
    }


def run_labelled(configs: Sequence[Config], log: Callable[[str], None]) -> dict[str, Any]:
    """Score every configuration on the robot and the episode set (every query, and per split)."""
    from benchmarks.ablation import EPISODE_FILE, ROBOT_FILE, Loaded
    from benchmarks.quality import _read_vectors, _vector_cache_path, _write_vectors

    from robotmem.adapters.cli.evaluate import BatchingEmbedder, load_documents
    from robotmem.evaluation import load_eval_set

    base = Settings(embed_backend="auto")
    embedder = BatchingEmbedder(create_embedder(base))
    out: dict[str, Any] = {c.label: {} for c in configs}
    with tempfile.TemporaryDirectory(prefix="robotmem-locomo-sets-") as home:
        for name, path in (("robot", ROBOT_FILE), ("episode", EPISODE_FILE)):
            cache = _vector_cache_path(path, embedder.model_id)
            if cache.exists():
                embedder.preload(_read_vectors(cache))
            settings = base.replace(home=Path(home), db_path=Path(home) / f"{name}.db")
            with RobotMemory(settings=settings, embedder=embedder) as mem:
                eval_set = load_eval_set(path)
                loaded = Loaded(mem, eval_set, load_documents(mem, eval_set), settings)
                _write_vectors(cache, embedder.cached())
                for config in configs:
                    result = {
                        split: loaded.score(config.changes, split)["scores"]
                        for split in ("all", "split:tune", "split:heldout")
                    }
                    out[config.label][name] = {
                        split: {m: result[split][m] for m in ("recall@1", "recall@5", "recall@10", "mrr")}
                        for split in result
                    }
            log(f"  scored the {name} set")
    return out


def _cell(value: float) -> str:
    return f"{value:.3f}"


def render_storing(result: dict[str, Any], parts: Sequence[str]) -> str:
    """Markdown: one column per configuration, rows of recall, per category, times and miss kinds."""
    labels = list(result["configs"])
    rows: list[list[str]] = []
    for part in parts:
        rows += [
            [f"{part} recall@{k}", *(_cell(result["configs"][c][part][f"recall@{k}"]) for c in labels)]
            for k in KS
        ]
    for part in parts:
        for category in CATEGORIES.values():
            for k in KS:
                cells = [result["configs"][c][part]["by_category"][category] for c in labels]
                count = cells[0]["questions"]
                rows.append(
                    [f"{part} {category} ({count}) recall@{k}", *(_cell(x[f"recall@{k}"]) for x in cells)]
                )
    rows.append(["recall p50 ms", *(f"{result['configs'][c]['p50_ms']:.1f}" for c in labels)])
    rows.append(["recall p95 ms", *(f"{result['configs'][c]['p95_ms']:.1f}" for c in labels)])
    for part in parts:
        for name in ("misses", *KINDS, *FLAGS):
            rows.append(
                [
                    f"{part} misses@5: {name}",
                    *(str(result["configs"][c]["misses"][part]["all"][name]) for c in labels),
                ]
            )
    title = (
        f"Storing **{result['storing']}**: {result['turns']} turns ({result['duplicates']} stored as duplicates, "
        f"{result['superseded']} superseded at end_session), {result['questions']} questions "
        f"({result['questions_without_stored_gold']} whose evidence ids name no stored turn), "
        f"load {result['load_s']} s"
    )
    return title + "\n\n" + markdown_table(["measure", *labels], rows)


def render_misses(result: dict[str, Any], part: str, label: str) -> str:
    """Markdown: the kinds and flags of the misses at 5 of one configuration, per category."""
    counts = result["configs"][label]["misses"][part]
    names = ["all", *CATEGORIES.values()]
    rows = [[name, *(str(counts[c][name]) for c in names)] for name in ("misses", *KINDS, *FLAGS)]
    return f"Misses at 5 ({result['storing']}, {part}, {label}):\n\n" + markdown_table(["kind", *names], rows)


def render_labelled(labelled: dict[str, Any]) -> str:
    labels = list(labelled)
    rows = []
    for name in ("robot", "episode"):
        for split in ("all", "split:heldout", "split:tune"):
            for metric in ("recall@1", "recall@5", "recall@10", "mrr"):
                rows.append(
                    [f"{name} {split} {metric}", *(_cell(labelled[c][name][split][metric]) for c in labels)]
                )
    first = labels[0]
    marks = []
    for label in labels:
        lost = [
            f"{name} {split}"
            for name in ("robot", "episode")
            for split in ("all", "split:heldout")
            if labelled[first][name][split]["recall@5"] - labelled[label][name][split]["recall@5"]
            > LABELLED_LOSS
        ]
        marks.append(", ".join(lost) or "none")
    rows.append([f"loses > {LABELLED_LOSS:.2f} recall@5 against the first", *marks])
    return markdown_table(["labelled sets", *labels], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="the LoCoMo JSON file (kept outside the repository)"
    )
    storing = parser.add_mutually_exclusive_group()
    storing.add_argument(
        "--sessions", action="store_true", help="store each LoCoMo session as a robotmem session"
    )
    storing.add_argument("--both", action="store_true", help="store both ways, plain and with sessions")
    parser.add_argument("--split", choices=("tune", "check", "all"), default="all")
    parser.add_argument(
        "--compare", nargs="+", default=[""], metavar="SPEC", help='e.g. "" "fusion=rrf,rrf_k=60"'
    )
    parser.add_argument("--no-labelled", action="store_true", help="skip the robot and episode sets")
    parser.add_argument(
        "--cached-queries", action="store_true", help="embed each question once (times exclude it)"
    )
    parser.add_argument(
        "--misses", type=Path, help="write every miss with its texts here (outside the repository)"
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    ensure_cache()
    configs = [parse_spec(spec) for spec in args.compare]
    if len({c.label for c in configs}) != len(configs):
        parser.error("--compare: every configuration must differ")
    # Every conversation is stored whatever the split (BM25 weighs words over the whole file, so the
    # memories stored change the scores); the split chooses the questions.
    conversations = load_conversations(args.data)
    asked = {c.sample_id for c in choose(conversations, args.split)}
    parts = ["tune", "check", "all"] if args.split == "all" else [args.split]
    base = create_embedder(Settings(embed_backend="auto"))
    embedder = CachedPassages(
        base, CACHE / f"locomo-passages-{base.model_id}.npz", cache_queries=args.cached_queries
    )
    embedder.prime(turn.memory_text for conv in conversations for turn in conv.turns)
    if args.cached_queries:
        embedder.prime_queries(q.text for conv in conversations for q in conv.questions)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    dump: list[dict[str, Any]] | None = [] if args.misses else None
    storings = [False, True] if args.both else [args.sessions]
    results = [
        run_storing(conversations, asked, configs, embedder, sessions=s, parts=parts, log=log, dump=dump)
        for s in storings
    ]
    labelled = None if args.no_labelled else run_labelled(configs, log)
    report = {
        "started": started,
        "machine": machine(),
        "model": embedder.model_id,
        "query_embedding_timed": not args.cached_queries,
        "split": args.split,
        "splits": SPLITS,
        "storings": results,
        "labelled": labelled,
    }
    if args.out:
        write_json(args.out, report)
    if dump is not None:
        write_misses(args.misses, dump)
    print(f"LoCoMo development half, {started}, model {embedder.model_id}, split {args.split}, n = {max(KS)}")
    for result in results:
        print("\n" + render_storing(result, parts))
    if labelled is not None:
        print("\n" + render_labelled(labelled))
    return 0


if __name__ == "__main__":
    sys.exit(main())
