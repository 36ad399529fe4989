"""Tests of the evaluation loader and the ranking metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotmem.errors import ValidationError
from robotmem.evaluation import (
    EvalSet,
    load_eval_set,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    score_run,
)

DATA_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "robot_eval.jsonl"

ids = st.sampled_from([f"d{i}" for i in range(12)])
rankings = st.lists(ids, max_size=15)
gold_sets = st.lists(ids, min_size=1, max_size=5, unique=True)
cutoffs = st.integers(min_value=1, max_value=20)


def write_lines(tmp_path: Path, rows: list[Any]) -> Path:
    path = tmp_path / "eval.jsonl"
    path.write_text("\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows) + "\n")
    return path


DOC = {"kind": "document", "id": "d1", "text": "Grip force 12 N lifted the mug", "context": {}}
QUERY = {"kind": "query", "id": "q1", "query": "mug grip force", "gold": ["d1"]}


# --- hand-computed metric values -------------------------------------------------------------------------


def test_recall_any_is_a_hit_rate() -> None:
    assert recall_at_k(["a", "b", "c"], {"c"}, 3) == 1.0
    assert recall_at_k(["a", "b", "c"], {"c"}, 2) == 0.0
    assert recall_at_k([], {"c"}, 5) == 0.0


def test_recall_all_counts_the_share_of_gold_found() -> None:
    assert recall_at_k(["a", "x", "b"], {"a", "b", "c"}, 3, mode="all") == pytest.approx(2 / 3)
    # gold larger than k: the denominator is capped at k so a perfect top-1 scores 1.0
    assert recall_at_k(["a"], {"a", "b"}, 1, mode="all") == 1.0
    assert recall_at_k(["x", "a"], {"a", "b"}, 1, mode="all") == 0.0


def test_recall_counts_repeated_ids_once() -> None:
    assert recall_at_k(["a", "a", "b"], {"a", "b"}, 2, mode="all") == 1.0


def test_reciprocal_rank_uses_first_gold_position() -> None:
    assert reciprocal_rank(["x", "y", "a", "b"], {"a", "b"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a"], {"a"}) == 1.0
    assert reciprocal_rank(["x", "x", "a"], {"a"}) == pytest.approx(1 / 2)
    assert reciprocal_rank(["x", "y"], {"a"}) == 0.0


def test_ndcg_matches_hand_computation() -> None:
    # gold at ranks 2 and 4 of 2 relevant: DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "a", "y", "b"], {"a", "b"}, 10) == pytest.approx(expected)
    assert ndcg_at_k(["x", "a", "y", "b"], {"a", "b"}, 2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 10) == 1.0
    assert ndcg_at_k(["x"], {"a"}, 10) == 0.0


@pytest.mark.parametrize("k", [0, -1])
def test_metrics_reject_cutoffs_below_one(k: int) -> None:
    with pytest.raises(ValidationError, match="k: expected an integer >= 1"):
        recall_at_k(["a"], {"a"}, k)
    with pytest.raises(ValidationError, match="k:"):
        ndcg_at_k(["a"], {"a"}, k)


def test_metrics_reject_empty_gold() -> None:
    with pytest.raises(ValidationError, match="gold"):
        reciprocal_rank(["a"], set())


def test_recall_rejects_unknown_mode() -> None:
    with pytest.raises(ValidationError, match="mode"):
        recall_at_k(["a"], {"a"}, 1, mode="some")  # type: ignore[arg-type]


# --- properties ------------------------------------------------------------------------------------------


@given(rankings, gold_sets, cutoffs)
def test_metrics_stay_within_unit_interval(ranked: list[str], gold: list[str], k: int) -> None:
    for value in (
        recall_at_k(ranked, gold, k),
        recall_at_k(ranked, gold, k, mode="all"),
        reciprocal_rank(ranked, gold),
        ndcg_at_k(ranked, gold, k),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@given(gold_sets, rankings, cutoffs)
def test_perfect_ranking_scores_one(gold: list[str], tail: list[str], k: int) -> None:
    ranked = gold + [doc for doc in tail if doc not in gold]
    assert recall_at_k(ranked, gold, k) == 1.0
    assert recall_at_k(ranked, gold, k, mode="all") == 1.0
    assert reciprocal_rank(ranked, gold) == 1.0
    assert ndcg_at_k(ranked, gold, k) == pytest.approx(1.0)


@given(rankings, gold_sets, cutoffs)
def test_recall_grows_with_k(ranked: list[str], gold: list[str], k: int) -> None:
    assert recall_at_k(ranked, gold, k) <= recall_at_k(ranked, gold, k + 1)


# --- score_run -------------------------------------------------------------------------------------------


def small_set(tmp_path: Path) -> EvalSet:
    rows = [
        DOC,
        {**DOC, "id": "d2", "text": "Grip force 30 N cracked the mug"},
        QUERY,
        {**QUERY, "id": "q2", "gold": ["d2"]},
    ]
    return load_eval_set(write_lines(tmp_path, rows))


def test_score_run_averages_over_queries(tmp_path: Path) -> None:
    eval_set = small_set(tmp_path)
    scores = score_run(eval_set, {"q1": ["d1", "d2"], "q2": ["d1", "d2"]}, ks=(1, 5))
    assert scores["queries"] == 2
    assert scores["missing"] == 0
    assert scores["recall@1"] == pytest.approx(0.5)
    assert scores["recall@5"] == 1.0
    assert scores["mrr"] == pytest.approx((1 + 0.5) / 2)
    assert scores["ndcg@5"] == pytest.approx((1 + 1 / math.log2(3)) / 2)


def test_score_run_counts_missing_queries_as_empty(tmp_path: Path) -> None:
    scores = score_run(small_set(tmp_path), {"q1": ["d1"]})
    assert scores["missing"] == 1
    assert scores["mrr"] == pytest.approx(0.5)


def test_score_run_restricts_to_a_split(tmp_path: Path) -> None:
    scores = score_run(small_set(tmp_path), {"q1": ["d1"], "q2": []}, query_ids={"q1"})
    assert scores["queries"] == 1
    assert scores["recall@1"] == 1.0


def test_score_run_rejects_unknown_query_ids(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="unknown query ids"):
        score_run(small_set(tmp_path), {"q9": ["d1"]})


# --- loader ----------------------------------------------------------------------------------------------


def test_loader_reads_documents_and_queries(tmp_path: Path) -> None:
    rows = [
        {**DOC, "collection": "arm", "context": {"params": {"grip_force": {"value": 12, "unit": "N"}}}},
        {"kind": "document", "id": "d2", "text": "相机曝光 8 毫秒时图像过暗", "type": "perception"},
        "",
        {**QUERY, "context_filter": {"task.success": True}, "tags": ["exact"], "collection": "arm"},
        {
            "kind": "query",
            "id": "q2",
            "query": "曝光",
            "gold": ["d2"],
            "spatial_sort": {"field": "spatial.position", "target": [1, 2, 3], "max_distance": 0.5},
        },
    ]
    eval_set = load_eval_set(write_lines(tmp_path, rows))
    first, second = eval_set.documents
    assert first.collection == "arm" and first.type == "fact" and first.lang == "en"
    assert first.context["params"]["grip_force"]["value"] == 12
    assert second.type == "perception" and second.perception_type == "visual" and second.lang == "zh"
    assert eval_set.queries[0].gold == ("d1",)
    assert eval_set.queries[0].context_filter == {"task.success": True}
    assert eval_set.queries[1].lang == "zh"
    assert eval_set.document("d2") is second


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["{not json"], r"line 1: json: invalid JSON"),
        (["[1, 2]"], r"line 1: json: expected an object"),
        ([{**DOC, "kind": "memo"}], r"line 1: kind: expected \"document\" or \"query\""),
        ([{**DOC, "text": "  "}], r"line 1: text: expected a non-empty string"),
        ([{**DOC, "context": [1]}], r"line 1: context: expected a JSON object"),
        ([{**DOC, "type": "rule"}], r"line 1: type:"),
        ([{**DOC, "perception_type": "visual"}], r"line 1: perception_type: allowed only"),
        ([{**DOC, "lang": "fr"}], r"line 1: lang:"),
        ([{**DOC, "colour": "red"}], r"line 1: colour: unknown field"),
        ([DOC, DOC], r"line 2: id: duplicate document id 'd1', first on line 1"),
        ([DOC, "", {**QUERY, "gold": []}], r"line 3: gold: expected a non-empty list"),
        ([DOC, {**QUERY, "gold": ["d1", "d1"]}], r"line 2: gold: repeated"),
        ([DOC, {**QUERY, "gold": ["d7"]}], r"line 2: gold: unknown document id 'd7'"),
        ([DOC, {**QUERY, "tags": "exact"}], r"line 2: tags:"),
        ([DOC, QUERY, QUERY], r"line 3: id: duplicate query id"),
        ([DOC, {**QUERY, "spatial_sort": {"target": [1]}}], r"line 2: spatial_sort.field"),
        (
            [DOC, {**QUERY, "spatial_sort": {"field": "spatial.position", "target": ["a"]}}],
            r"spatial_sort.target",
        ),
        (
            [DOC, {**QUERY, "spatial_sort": {"field": "p", "target": [1], "max_distance": -1}}],
            r"spatial_sort.max_distance",
        ),
    ],
)
def test_loader_names_line_and_field(tmp_path: Path, rows: list[Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load_eval_set(write_lines(tmp_path, rows))


def test_loader_reports_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot be read"):
        load_eval_set(tmp_path / "absent.jsonl")


# --- the shipped evaluation set ---------------------------------------------------------------------------


@pytest.mark.skipif(not DATA_FILE.exists(), reason="evaluation set not built")
def test_shipped_eval_set_is_valid_and_large_enough() -> None:
    eval_set = load_eval_set(DATA_FILE)
    assert len(eval_set.documents) >= 320
    assert len(eval_set.queries) >= 110
    assert all(1 <= len(query.gold) <= 3 for query in eval_set.queries)
    chinese = sum(query.lang == "zh" for query in eval_set.queries)
    assert len(eval_set.queries) / 4 <= chinese <= len(eval_set.queries) / 2
    # The split follows the query number alone: odd numbers tune, even numbers confirm.
    assert all(q.split == ("tune" if int(q.id[1:]) % 2 else "heldout") for q in eval_set.queries)
    tags = {tag for q in eval_set.queries for tag in q.tags}
    assert {"identifier", "parameter", "paraphrase", "exact"} <= tags


def test_loader_reads_sessions_and_splits(tmp_path: Path) -> None:
    rows = [
        {**DOC, "session": "grasp-s0"},
        {**QUERY, "split": "heldout", "tags": ["parameter"]},
    ]
    eval_set = load_eval_set(write_lines(tmp_path, rows))
    assert eval_set.documents[0].session == "grasp-s0"
    assert eval_set.queries[0].split == "heldout"
    with pytest.raises(ValidationError, match=r"line 2: split: expected a non-empty string"):
        load_eval_set(write_lines(tmp_path, [DOC, {**QUERY, "split": ""}]))


EPISODE_FILE = DATA_FILE.with_name("episode_eval.jsonl")


@pytest.mark.skipif(not EPISODE_FILE.exists(), reason="episode set not built")
def test_shipped_episode_set_has_its_logs_types_and_splits() -> None:
    eval_set = load_eval_set(EPISODE_FILE)
    assert len(eval_set.queries) >= 300
    assert len({d.collection for d in eval_set.documents}) >= 10
    assert {q.split for q in eval_set.queries} == {"tune", "heldout"}
    types = {tag for q in eval_set.queries for tag in q.tags}
    assert types == {"paraphrase", "neighbour", "entity", "contradiction", "parameter"}
    assert {q.lang for q in eval_set.queries} == {"en", "zh"}
    # A fixed split by log: no log has queries in both parts.
    split_of: dict[str | None, set[str | None]] = {}
    for query in eval_set.queries:
        split_of.setdefault(query.collection, set()).add(query.split)
    assert all(len(parts) == 1 for parts in split_of.values())
    assert all(d.session is not None for d in eval_set.documents)
