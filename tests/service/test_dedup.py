"""Dedup on learn: the rare-word probe keeps every possible duplicate; a lesson's opposite is never one."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.lessons import OPPOSITES, VARIANTS
from tests.strategies import examples

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.rules.dedup import SCREEN_LIMIT, find_jaccard_duplicate, same_experience, same_experience_as
from robotmem.text import filler
from robotmem.text.tokens import jaccard, word_set


@pytest.fixture(autouse=True, scope="module")
def segmenter_loaded() -> None:
    """Load the CJK dictionary once, so its first-use cost does not count against hypothesis deadlines."""
    word_set("抓取")


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

    def work(tx):  # type: ignore[no-untyped-def]
        probed = tx.memories.jaccard_candidates(bm25_memory.collection, probe_text, 100, 0.7)
        rows = [
            (r["memory"]["id"], r["memory"]["content"])
            for r in tx.transfer.iter_memories(None, with_vectors=False)
        ]
        return set(probed), rows

    probed, rows = bm25_memory.engine.read(work)
    above = {m for m, content in rows if jaccard(word_set(probe_text), word_set(content)) >= 0.7}
    assert above
    assert above <= probed


def test_a_text_of_unknown_words_has_no_candidates(bm25_memory: RobotMemory) -> None:
    bm25_memory.learn("grip_force 12 N holds the mug")

    found = bm25_memory.engine.read(
        lambda tx: tx.memories.jaccard_candidates(bm25_memory.collection, "zebra quokka axolotl", 20, 0.7)
    )
    assert found == []


@pytest.mark.parametrize("texts_sharing_the_number", [0, SCREEN_LIMIT + 1])
def test_number_screen_keeps_cosine_and_jaccard_duplicates(
    tmp_path: Path, locate: Callable[[str], Any], texts_sharing_the_number: int
) -> None:
    settings = Settings(home=tmp_path / "home", dedup_cosine=0.8)
    with RobotMemory(locate("m.db"), embed_backend="hash", settings=settings) as mem:
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


@given(dedup_texts, st.lists(dedup_texts, max_size=6), st.sampled_from([0.0, 0.5, 0.7, 1.0, 1.01]))
@example("grip", ["grip the"], 0.7)  # word Jaccard 0.5, an article apart: still the same experience
def test_duplicate_search_reads_the_text_once_and_decides_as_pair_by_pair(
    text: str, others: list[str], threshold: float
) -> None:
    # The threshold bounds the content words' Jaccard, which is 1.0 for the same experience: up to 1 every
    # such candidate qualifies, above 1 none does; the closest wording (word Jaccard) wins.
    words = word_set(text)
    expected = None
    for memory_id, content in enumerate(others):
        similarity = jaccard(words, word_set(content))
        better = expected is None or similarity > expected[1]
        if same_experience(text, content) and threshold <= 1.0 and better:
            expected = (memory_id, round(similarity, 4))
    found = find_jaccard_duplicate(text, list(enumerate(others)), threshold)

    assert (None if found is None else (found.existing_id, found.similarity)) == expected
    assert [same_experience_as(text)(other) for other in others] == [
        same_experience(text, other) for other in others
    ]


CONTRADICTIONS = OPPOSITES


@pytest.fixture
def eager(tmp_path: Path, locate: Callable[[str], Any]) -> Iterator[RobotMemory]:
    """A memory whose Jaccard and cosine thresholds would call every pair above a duplicate, but for the words."""
    settings = Settings(home=tmp_path / "home", dedup_jaccard=0.3, dedup_cosine=0.5)
    with RobotMemory(locate("eager.db"), embed_backend="hash", settings=settings) as mem:
        yield mem


@pytest.mark.parametrize(("first", "second"), CONTRADICTIONS)
def test_learn_stores_both_lessons_of_a_contradicting_pair(
    eager: RobotMemory, first: str, second: str
) -> None:
    stored = eager.learn(first)
    opposite = eager.learn(second)

    assert (stored["status"], opposite["status"]) == ("created", "created")
    assert {m["content"] for m in eager.list_memories()["memories"]} == {first, second}
    assert eager.learn(second)["status"] == "duplicate"  # the opposite itself is now known


@pytest.mark.parametrize(("first", "second"), VARIANTS)
def test_case_punctuation_and_filler_variants_stay_duplicates(
    memory: RobotMemory, first: str, second: str
) -> None:
    stored = memory.learn(first)
    repeat = memory.learn(second)

    assert (repeat["status"], repeat["existing_id"]) == ("duplicate", stored["memory_id"])


@pytest.mark.slow
def test_the_bundled_model_does_not_swallow_an_opposite(real_memory: RobotMemory) -> None:
    for number, (first, second) in enumerate(CONTRADICTIONS):
        collection = f"pair-{number}"
        assert real_memory.learn(first, collection=collection)["status"] == "created"
        assert real_memory.learn(second, collection=collection)["status"] == "created", second
        assert real_memory.learn(second.upper(), collection=collection)["status"] == "duplicate"


@pytest.mark.slow
def test_the_bundled_model_still_finds_every_variant(real_memory: RobotMemory) -> None:
    for number, (first, second) in enumerate(VARIANTS):
        collection = f"variant-{number}"
        stored = real_memory.learn(first, collection=collection)
        repeat = real_memory.learn(second, collection=collection)
        assert (repeat["status"], repeat.get("existing_id")) == ("duplicate", stored["memory_id"]), second


@pytest.fixture
def shared_memory(tmp_path: Path, locate: Callable[[str], Any]) -> Iterator[RobotMemory]:
    """One store for every example of the property below (each example learns into its own collection)."""
    settings = Settings(home=tmp_path / "home", dedup_jaccard=0.3, dedup_cosine=0.5)
    with RobotMemory(locate("m.db"), embed_backend="hash", settings=settings) as mem:
        yield mem


_collections = itertools.count()


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(CONTRADICTIONS + [(b, a) for a, b in CONTRADICTIONS]),
    st.sampled_from(["", ".", "!", " 。"]),
)
def test_learn_never_reports_an_opposite_as_a_duplicate(
    shared_memory: RobotMemory, pair: tuple[str, str], ending: str
) -> None:
    collection = f"c{next(_collections)}"
    first, second = pair
    shared_memory.learn(first, collection=collection)

    assert shared_memory.learn(second.lower() + ending, collection=collection)["status"] == "created"
    assert shared_memory.learn(first.upper() + ending, collection=collection)["status"] == "duplicate"


# Words of letters outside every filler list, without a final "s" (read as a plural).
_FILLER = {
    word
    for words in (filler.FILLER_WORDS_EN, filler.OPENERS_EN, filler.COMMA_OPENERS_EN)
    for word in words.split()
}
_FILLER |= {
    w
    for phrases in (filler.FILLER_PHRASES_EN, filler.FILLER_CLAUSES_EN)
    for w in phrases.replace("|", " ").split()
}
content_word = st.from_regex(r"[a-z]{3,9}", fullmatch=True).filter(
    lambda w: w not in _FILLER and not w.endswith("s") and w != "cannot"
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(content_word, min_size=2, max_size=8), content_word, st.integers(0, 8), st.booleans())
def test_learn_stores_a_lesson_with_one_more_or_one_other_word(
    shared_memory: RobotMemory, words: list[str], word: str, at: int, insert: bool
) -> None:
    at %= len(words)
    changed = list(words)
    if insert:
        changed.insert(at, word)
    elif changed[at] != word:
        changed[at] = word
    else:
        return
    collection = f"c{next(_collections)}"
    shared_memory.learn(" ".join(words), collection=collection)

    assert shared_memory.learn(" ".join(changed), collection=collection)["status"] == "created"
