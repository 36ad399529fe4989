"""The rare-word probe of the Jaccard dedup query keeps every possible duplicate."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.dedup import SCREEN_LIMIT, find_jaccard_duplicate, same_experience, same_experience_as
from robotmem.store.sqlite import search
from robotmem.text import jaccard, word_set

WHERE = "m.status = 'active' AND m.type = 'fact' AND m.collection = :p_collection"


def test_learn_still_finds_a_jaccard_duplicate_among_common_words(bm25_memory: RobotMemory) -> None:
    for i in range(60):
        bm25_memory.learn(f"Grasp trial {i} on the mug: grip_force {i} N worked with a slow approach")
    original = bm25_memory.learn("The padded gripper held the wet glass bottle firmly at grip_force 7 N")

    repeat = bm25_memory.learn("The padded gripper held the wet glass bottle very firmly at grip_force 7 N")

    assert repeat["status"] == "duplicate"
    assert repeat["method"] == "jaccard"
    assert repeat["existing_id"] == original["memory_id"]


def test_probe_candidates_hold_every_row_above_the_threshold(bm25_memory: RobotMemory) -> None:
    texts = [f"Push episode {i}: block moved 0.{i % 9 + 1} m with the arm fully extended" for i in range(40)]
    texts += ["Push episode 7: block moved 0.8 m with the arm extended", "Push the block gently"]
    for text in texts:
        bm25_memory.learn(text)
    probe_text = "Push episode 7: block moved 0.8 m with the arm fully extended today"

    def work(conn):  # type: ignore[no-untyped-def]
        params = {"p_collection": bm25_memory.collection}
        probed = search.jaccard_candidates(conn, probe_text, WHERE, params, 100, 0.7)
        rows = conn.execute("SELECT id, content FROM memories").fetchall()
        return {m for m, _ in probed}, rows

    probed, rows = bm25_memory.engine.read(lambda tx: work(tx.conn))
    above = {m for m, content in rows if jaccard(word_set(probe_text), word_set(content)) >= 0.7}
    assert above
    assert above <= probed


def test_a_text_of_unknown_words_has_no_candidates(bm25_memory: RobotMemory) -> None:
    bm25_memory.learn("grip_force 12 N holds the mug")

    found = bm25_memory.engine.read(
        lambda tx: search.jaccard_candidates(
            tx.conn, "zebra quokka axolotl", WHERE, {"p_collection": bm25_memory.collection}, 20, 0.7
        )
    )
    assert found == []


@pytest.mark.parametrize("texts_sharing_the_number", [0, SCREEN_LIMIT + 1])
def test_number_screen_keeps_cosine_and_jaccard_duplicates(
    tmp_path: Path, texts_sharing_the_number: int
) -> None:
    settings = Settings(home=tmp_path / "home", dedup_cosine=0.8)
    with RobotMemory(tmp_path / "m.db", embed_backend="hash", settings=settings) as mem:
        for i in range(texts_sharing_the_number):
            mem.learn(f"Calibration log {i} of camera 12 shows drift")
        original = mem.learn("The padded gripper held the red mug firmly at 12 N")

        reworded = mem.learn("The padded gripper held the red mug very firmly at 12 N")
        other_force = mem.learn("The padded gripper held the red mug very firmly at 13 N")
        mem.settings = mem.settings.replace(dedup_jaccard=1.01)  # only the vector scan can find it now
        by_vector = mem.learn("The padded gripper held the red mug quite firmly at 12 N")

    assert (reworded["status"], reworded["method"], reworded["existing_id"]) == (
        "duplicate",
        "jaccard",
        original["memory_id"],
    )
    assert other_force["status"] == "created"
    assert (by_vector["status"], by_vector["method"]) == ("duplicate", "cosine")


dedup_texts = st.lists(
    st.sampled_from(
        ["grip", "force", "12", "12.50", "not", "failed", "success", "left", "the", "mug", "抓取", "没"]
    ),
    min_size=1,
    max_size=8,
).map(" ".join)


@given(dedup_texts, st.lists(dedup_texts, max_size=6), st.sampled_from([0.0, 0.5, 0.7, 1.0]))
def test_duplicate_search_reads_the_text_once_and_decides_as_pair_by_pair(
    text: str, others: list[str], threshold: float
) -> None:
    words = word_set(text)
    expected = None
    for memory_id, content in enumerate(others):
        similarity = jaccard(words, word_set(content))
        better = expected is None or similarity > expected[1]
        if same_experience(text, content) and similarity >= threshold and better:
            expected = (memory_id, round(similarity, 4))
    found = find_jaccard_duplicate(text, list(enumerate(others)), threshold)

    assert (None if found is None else (found.existing_id, found.similarity)) == expected
    assert [same_experience_as(text)(other) for other in others] == [
        same_experience(text, other) for other in others
    ]
