"""`python -m benchmarks.locomo` on a small file of LoCoMo's shape, written here (the real one stays outside).

Reading and storing follow the data's README (one memory per turn, the caption appended, 300 characters,
evidence split on ``;`` and spaces, category 5 left out), and a run scores both ways of storing and
every configuration given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks import locomo, locomo_data
from benchmarks.locomo_data import load_conversations, parse_evidence

from robotmem.embedders.hashing import HashingEmbedder

LONG = "word " * 80


def _sample(sample_id: str) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ada",
            "speaker_b": "Bo",
            "session_1_date_time": "9:12 am on 2 February, 2024",
            "session_1": [
                {"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a grey kitten named Pixel."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a photo of a cat"},
            ],
            "session_2_date_time": "8:40 pm on 14 March, 2024",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "The marathon in Lisbon went well."},
                {"speaker": "Ada", "dia_id": "D2:2", "text": LONG},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ada's kitten?",
                "answer": "Pixel",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where did Bo run a marathon?",
                "answer": "Lisbon",
                "evidence": ["D2:1; D1:2"],
                "category": 1,
            },
            {"question": "When did Bo run?", "answer": "July", "evidence": ["D:9:9"], "category": 2},
            {"question": "What did Ada never say?", "answer": "nothing", "evidence": [], "category": 5},
        ],
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-shaped.json"
    path.write_text(json.dumps([_sample("conv-26"), _sample("conv-42")]), encoding="utf-8")
    return path


def test_turns_and_questions_are_read_as_the_data_readme_says(data: Path) -> None:
    tune, check = load_conversations(data)
    assert (tune.sample_id, check.sample_id) == ("conv-26", "conv-42")
    texts = [t.memory_text for t in tune.turns]
    assert texts[:3] == [
        "Ada: I adopted a grey kitten named Pixel.",
        "Bo: Lovely! [image: a photo of a cat]",
        "Bo: The marathon in Lisbon went well.",
    ]
    assert len(texts[3]) == 300
    assert [t.date for t in tune.turns] == ["9:12 am on 2 February, 2024"] * 2 + [
        "8:40 pm on 14 March, 2024"
    ] * 2
    assert [(q.category, q.gold) for q in tune.questions] == [
        (4, ("D1:1",)),
        (1, ("D2:1", "D1:2")),
        (2, ("D:9:9",)),
    ]
    assert parse_evidence(["D8:6; D9:17", "D1:3 D1:4", ""]) == ("D8:6", "D9:17", "D1:3", "D1:4")


def test_a_run_scores_both_ways_of_storing_and_every_configuration(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(locomo, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(locomo, "create_embedder", lambda settings: HashingEmbedder(dim=32))
    out = tmp_path / "result.json"
    args = ["--data", str(data), "--both", "--no-labelled", "--cached-queries", "--out", str(out)]
    assert (
        locomo.main([*args, "--compare", "", "vector_weight=0", "episode_field=session,neighbour_span=2"])
        == 0
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [s["storing"] for s in report["storings"]] == ["plain", "sessions"]
    for storing in report["storings"]:
        assert storing["turns"] == 8 and storing["questions"] == 6
        assert storing["questions_without_stored_gold"] == 2  # "D:9:9" names no turn
        for scores in storing["configs"].values():
            assert scores["tune"]["questions"] == scores["check"]["questions"] == 3
            assert scores["tune"]["by_category"]["single-hop"]["recall@10"] == 1.0  # 4 turns, n = 10
            assert scores["all"]["recall@10"] == pytest.approx(4 / 6)
            assert scores["p50_ms"] > 0
    assert "| tune recall@5 |" in capsys.readouterr().out
    assert (tmp_path / "cache").is_dir() and not any(
        p.suffix == ".json" for p in (tmp_path / "cache").iterdir()
    )


def test_misses_are_never_written_inside_the_repository(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside = locomo.ROOT / "benchmarks" / "misses.jsonl"
    with pytest.raises(SystemExit, match="may not be copied into the repository"):
        locomo.write_misses(inside, [])
    assert not inside.exists()
    assert locomo_data.SPLITS == {"tune": ("conv-26", "conv-30", "conv-41"), "check": ("conv-42", "conv-43")}
