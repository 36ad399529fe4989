"""A lesson and its opposite are never one lesson, whether or not any list names the opposite.

Two texts are one experience only when the words they differ in are all filler (``robotmem.text.filler``):
case, punctuation, spacing and filler words change nothing, and every other word decides. The vocabularies
below are generated, not drawn from any list robotmem holds.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.lessons import OPPOSITES, VARIANTS

from robotmem.rules.consolidation import Candidate, plan_consolidation
from robotmem.rules.dedup import find_jaccard_duplicate, same_experience
from robotmem.text import filler, wording
from robotmem.text.tokens import segment, word_set
from robotmem.text.wording import content_words


@pytest.fixture(autouse=True, scope="module")
def segmenter_loaded() -> None:
    """Load the CJK dictionary once, so its first-use cost does not count against hypothesis deadlines."""
    word_set("机械臂")


def phrases(*lists: str) -> list[tuple[str, ...]]:
    return [tuple(p.split()) for words in lists for p in words.split("|") if p.split()]


NEVER = frozenset(filler.NEVER_FILLER.split())
NEGATORS = frozenset(filler.NEGATORS.split())
ANYWHERE = phrases(filler.FILLER_PHRASES_EN, filler.FILLER_PHRASES_ZH)
WHOLE_CLAUSES = phrases(filler.FILLER_CLAUSES_EN, filler.FILLER_CLAUSES_ZH)
# Every word any filler list holds: generated vocabularies avoid them.
LISTED = (
    wording.FILLER_WORDS
    | wording.QUANTITY_LINKS
    | wording.OPENERS
    | wording.COMMA_OPENERS
    | {word for phrase in ANYWHERE + WHOLE_CLAUSES for word in phrase}
)


def test_no_negator_or_decisive_word_is_filler() -> None:
    assert {"not", "never", "without", "不", "没", "未", "无", "非", "别", "勿"} <= NEGATORS <= NEVER
    assert not NEVER & (wording.FILLER_WORDS | wording.OPENERS)
    assert not NEVER & {word for phrase in ANYWHERE for word in phrase}
    # "right" is a filler only as a whole first clause ending in a comma ("Right, …")
    assert not NEGATORS & (wording.COMMA_OPENERS | {word for phrase in WHOLE_CLAUSES for word in phrase})


def test_chinese_filler_is_written_as_the_dictionary_segments_it() -> None:
    single = " ".join([filler.FILLER_WORDS_ZH, filler.OPENERS_ZH, filler.COMMA_OPENERS_ZH]).split()
    assert [w for w in single if segment(w, guess=False) != [w]] == []
    chinese = phrases(filler.FILLER_PHRASES_ZH, filler.FILLER_CLAUSES_ZH)
    assert all(segment("".join(phrase), guess=False) == list(phrase) for phrase in chinese)


@pytest.mark.parametrize(("first", "second"), OPPOSITES)
def test_opposite_lessons_are_never_one_experience(first: str, second: str) -> None:
    assert not same_experience(first, second) and not same_experience(second, first)
    assert find_jaccard_duplicate(second, [(1, first)], threshold=0.0) is None
    candidates = [
        Candidate(i, "observation", 0.8, 0, "2026-01-01", t) for i, t in enumerate([first, second, first])
    ]
    merges = plan_consolidation(candidates, 0.0).merges
    assert [{m.representative, *m.merged} for m in merges] == [
        {0, 2}
    ]  # the repeat merges, the opposite never


@pytest.mark.parametrize(("first", "second"), VARIANTS)
def test_wordings_of_one_lesson_are_one_experience(first: str, second: str) -> None:
    assert same_experience(first, second) and same_experience(second, first)
    found = find_jaccard_duplicate(second, [(1, first)], threshold=0.7)
    assert found is not None and found.existing_id == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Right, the wheel slips on the ramp", "The wheel slips on the ramp"),
        ("Most importantly, slow down near people", "Slow down near people"),
        ("Slow down near people, as noted before", "Slow down near people"),
        ("Always remember: lock the brake", "Lock the brake"),
        ("OK, so, note: the gripper slips on wet metal", "The gripper slips on wet metal"),
        ("It's the robot's third box", "It is the robot third box"),
        ("The arm can't reach the shelf; it won't stop", "The arm cannot reach the shelf, it will not stop"),
        ("Stack the boxes on the pallet", "Stack the box on the pallet"),
        ("Speed 0.80 m/s on the ramp", "speed 0.8 m / s on the ramp"),
        ("请注意：夹爪打开后抓取", "夹爪打开后抓取"),
        ("好，夹爪打开后抓取", "夹爪打开后抓取"),
        ("我觉得夹爪打开后抓取了", "夹爪打开后抓取"),
        ("抓取玻璃杯前先打开夹爪", "抓取玻璃杯前，先打开夹爪！"),  # the comma moves a word boundary
        ("Grip the mug with 12 N of force", "Grip the mug with 12 N force"),  # "of" after a quantity
        ("Keep 5 cm of clearance", "Keep 5 cm clearance"),
        ("3 of 4 grasps failed", "3 4 grasps failed"),
    ],
)
def test_filler_case_and_punctuation_change_nothing(first: str, second: str) -> None:
    assert content_words(first) == content_words(second)
    assert same_experience(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Right: keep 30 cm clearance", "Keep 30 cm clearance"),  # a heading, not a filler
        ("Grip the top of the box", "Grip the top box"),  # "of" away from a quantity decides
        ("3 of 4 grasps failed", "3 to 4 grasps failed"),
        ("Turn right, then stop", "Turn, then stop"),
        ("Now the gripper opens", "The gripper opens"),
        ("Move the arm before the tray, most importantly", "Move the arm the tray"),
        ("Always lock the brake", "Lock the brake"),
        ("Most boxes slip", "Boxes slip"),
        ("Robot 3 lifts the box", "Robot lifts the box 3"),
        ("robot12 lifts the box", "robot13 lifts the box"),
        ("The battery is charged", "The battery is charging"),
        ("No, the gripper slips", "The gripper slips"),
        ("七号机器人抓取失败", "八号机器人抓取失败"),
        ("好的夹爪打开后抓取", "夹爪打开后抓取"),  # "好的夹爪" is "a good gripper"
        ("The brake is un-locked when docked", "The brake is locked when docked"),
        ("Put the box on a non-slip mat", "Put the box on a slip mat"),
        ("The gripper is mis-aligned", "The gripper is aligned"),
        ("移动机械臂是不安全的", "移动机械臂是安全的"),
        ("这个读数非法", "这个读数合法"),
        ("托盘未清空", "托盘清空"),
    ],
)
def test_words_that_look_like_filler_still_decide(first: str, second: str) -> None:
    assert not same_experience(first, second)


# Generated vocabularies: English words of letters that no filler list holds (without a final "s", which
# would read as a plural), and Chinese words of characters that no Chinese filler holds.
FILLER_CHARACTERS = frozenset("".join(word for word in LISTED if not word.isascii()))
ENGLISH = st.from_regex(r"[a-z]{2,9}", fullmatch=True).filter(
    lambda w: w not in LISTED and not w.endswith("s") and w not in {"cannot", "won", "shan"}
)
CHINESE = st.text(
    alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5).filter(
        lambda c: c not in FILLER_CHARACTERS
    ),
    min_size=1,
    max_size=3,
)


@st.composite
def lesson_and_one_more_word(draw: st.DrawFn) -> tuple[str, str]:
    """A lesson of generated words, and the same lesson with one generated word inserted or replaced."""
    chinese = draw(st.booleans())
    vocabulary = CHINESE if chinese else ENGLISH
    words = draw(st.lists(vocabulary, min_size=1, max_size=8))
    at = draw(st.integers(0, len(words) - 1))
    word = draw(vocabulary.filter(lambda w: w != words[at]))
    changed = list(words)
    if draw(st.booleans()):
        changed.insert(at + draw(st.integers(0, 1)), word)
    else:
        changed[at] = word
    joiner = "" if chinese else " "
    return joiner.join(words), joiner.join(changed)


@given(lesson_and_one_more_word(), st.booleans())
def test_inserting_or_replacing_any_content_word_is_never_a_duplicate(
    pair: tuple[str, str], swap: bool
) -> None:
    first, second = pair[::-1] if swap else pair
    assert not same_experience(first, second)
    assert find_jaccard_duplicate(second, [(1, first)], threshold=0.0) is None
    candidates = [
        Candidate(i, "observation", 0.8, 0, "2026-01-01", t) for i, t in enumerate([first, second, first])
    ]
    merges = plan_consolidation(candidates, 0.0).merges
    assert [{m.representative, *m.merged} for m in merges] == [{0, 2}]


ENGLISH_FILLER = st.one_of(
    st.sampled_from(sorted(filler.FILLER_WORDS_EN.split())),
    st.sampled_from([" ".join(p) for p in phrases(filler.FILLER_PHRASES_EN)]),
    st.sampled_from([", " + " ".join(p) + "," for p in phrases(filler.FILLER_CLAUSES_EN)]),
)
# Chinese lessons are made of dictionary words, so a particle cannot join a neighbour into another word.
CHINESE_WORDS = st.sampled_from(
    ["机械臂", "夹爪", "托盘", "相机", "杯子", "移动", "传感器", "电池", "轨迹", "抓取"]
)
CHINESE_FILLER = st.sampled_from(
    sorted({*filler.FILLER_WORDS_ZH.split(), *("".join(p) for p in phrases(filler.FILLER_PHRASES_ZH))})
)
OPENER = st.sampled_from(["", "Note: ", "OK, so, ", "Right, ", "Important! ", "注意：", "好，", "记住，"])


@st.composite
def lesson_and_filler_variant(draw: st.DrawFn) -> tuple[str, str]:
    """A lesson, and the same lesson with filler words, phrases and an opener inserted."""
    chinese = draw(st.booleans())
    words = draw(st.lists(CHINESE_WORDS if chinese else ENGLISH, min_size=1, max_size=8))
    # one filler to a gap between Chinese words: two particles side by side can be a word ("呀呀")
    gaps = st.integers(0, len(words))
    at = draw(st.sets(gaps, min_size=1, max_size=4) if chinese else st.lists(gaps, min_size=1, max_size=4))
    padded = list(words)
    for gap in sorted(at, reverse=True):
        padded.insert(gap, draw(CHINESE_FILLER if chinese else ENGLISH_FILLER))
    joiner = "" if chinese else " "
    return joiner.join(words), draw(OPENER) + joiner.join(padded)


@given(lesson_and_filler_variant())
def test_inserting_filler_words_is_always_a_duplicate(pair: tuple[str, str]) -> None:
    first, second = pair
    assert content_words(first) == content_words(second), pair
    assert same_experience(first, second)
