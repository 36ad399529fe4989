"""Polarity: a lesson and its opposite are never one lesson; case, punctuation and filler change nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotmem import polarity_lexicon as lexicon
from robotmem.consolidation import Candidate, plan_consolidation
from robotmem.dedup import find_jaccard_duplicate, same_experience
from robotmem.polarity import negated_stem, opposed, polarity
from robotmem.text import word_set


@pytest.fixture(autouse=True, scope="module")
def segmenter_loaded() -> None:
    """Load the CJK dictionary once, so its first-use cost does not count against hypothesis deadlines."""
    word_set("机械臂")


def forms(pairs: tuple[tuple[str, str], ...], negators: str) -> list[str]:
    return [form for pair in pairs for pole in pair for form in pole.split()] + negators.split()


@pytest.mark.parametrize(
    ("pairs", "negators"),
    [(lexicon.ANTONYMS_EN, lexicon.NEGATORS_EN), (lexicon.ANTONYMS_ZH, lexicon.NEGATORS_ZH)],
)
def test_every_decisive_word_belongs_to_one_entry(pairs: tuple[tuple[str, str], ...], negators: str) -> None:
    listed = forms(pairs, negators)
    assert len(listed) == len(set(listed)), sorted({f for f in listed if listed.count(f) > 1})
    assert not set(listed) & set(lexicon.EXCEPTIONS_ZH.split())


def test_each_chinese_entry_marks_alone_and_each_exception_marks_nothing() -> None:
    for pair in lexicon.ANTONYMS_ZH:
        for pole in pair:
            assert {polarity(form).marks for form in pole.split()} == {(pole.split()[0],)}, pole
    assert {polarity(word).marks for word in lexicon.NEGATORS_ZH.split()} == {("not",)}
    assert {polarity(word).marks for word in lexicon.EXCEPTIONS_ZH.split()} == {()}


def test_prefix_exceptions_start_with_a_negating_prefix() -> None:
    assert all(word.startswith(lexicon.NEGATING_PREFIXES_EN) for word in lexicon.PREFIX_EXCEPTIONS_EN.split())
    assert negated_stem("under") is None and negated_stem("display") is None and negated_stem("undo") is None
    assert negated_stem("unsafe") == "safe" and negated_stem("disconnect") == "connect"


OPPOSITES = [
    (
        "it is safe to move the arm while the safety door is open",
        "it is unsafe to move the arm while the safety door is open",
    ),
    ("the safety door is open", "the safety door is closed"),
    ("entering the cell is allowed", "entering the cell is forbidden"),
    ("enable the brake before teaching", "disable the brake before teaching"),
    ("use the maximum grip force", "use the minimum grip force"),
    ("increase the speed near the dock", "decrease the speed near the dock"),
    ("the pump stays on", "the pump stays off"),
    ("the lidar sees the glass wall", "the lidar doesn't see the glass wall"),
    ("grasp with the soft pads", "grasp without the soft pads"),
    ("the reading is correct", "the reading is incorrect"),
    ("the brake is locked when docked", "the brake is unlocked when docked"),
    ("a slip surface breaks odometry", "a non-slip surface breaks odometry"),
    ("open the door before you close the gripper", "close the door before you open the gripper"),
    ("the unstable arm is stable now", "the unstable arm is unstable now"),
    ("安全门打开时移动机械臂是安全的", "安全门打开时移动机械臂是不安全的"),
    ("安全门打开时允许移动机械臂", "安全门打开时禁止移动机械臂"),
    ("抓取前先打开夹爪", "抓取前先关闭夹爪"),
    ("使用最大夹持力", "使用最小夹持力"),
    ("夹爪为空时增加速度", "夹爪为空时减少速度"),
    ("这次抓取成功了", "这次抓取失败了"),
    ("激光雷达能看到玻璃墙", "激光雷达看不到玻璃墙"),
    ("充电前触点已经清洁", "充电前触点未清洁"),
    ("这条路线有碰撞风险", "这条路线无碰撞风险"),
]


@pytest.mark.parametrize(("first", "second"), OPPOSITES)
def test_opposite_lessons_are_opposed_both_ways(first: str, second: str) -> None:
    assert opposed(polarity(first), polarity(second)) and opposed(polarity(second), polarity(first))
    assert not same_experience(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Don't open the door", "do not open the door."),
        ("The CUP slipped!", "the cup slipped"),
        ("Note: the gripper slips on wet metal", "the gripper slips on wet metal"),
        ("基本上，夹爪打开后抓取", "夹爪打开后抓取"),
        ("夹持力 10 N 左右即可", "夹持力 10 N 即可"),
        ("当前识别的无人机很稳定", "当前识别的无人机很稳定。"),
        ("the unit is under the table", "the unit is under the table!"),
    ],
)
def test_variants_of_one_lesson_are_not_opposed(first: str, second: str) -> None:
    assert same_experience(first, second)


# Words that are decisive in no entry, to build lessons around the decisive ones.
NEUTRAL_EN = [
    "the",
    "gripper",
    "arm",
    "cup",
    "camera",
    "pump",
    "door",
    "robot",
    "tray",
    "moves",
    "holds",
    "near",
]
# Chinese has no spaces, so neutral words are chosen not to join a neighbour into a longer lexicon entry.
NEUTRAL_ZH = ["机械臂", "夹爪", "托盘", "相机", "杯子", "移动", "传感器", "电池", "轨迹", "抓取"]
PREFIXABLE = ["safe", "stable", "correct", "valid", "locked", "connected", "secure", "accurate", "possible"]
PUNCTUATION = [",", ".", "!", ";", ":", "(", ")", '"', "…", "，", "。", "！"]


# Any English word: decisive or not, the change applied next to it must still show.
ANY_EN = st.one_of(st.sampled_from(NEUTRAL_EN), st.from_regex(r"[a-z]{1,10}", fullmatch=True))


def alternating(draw: st.DrawFn, chinese: bool, extra: str | None, at: int, decisive: list[str]) -> list[str]:
    """Neutral words around each decisive word (and ``extra`` in gap ``at``), so none touches another."""
    neutral = st.sampled_from(NEUTRAL_ZH) if chinese else ANY_EN
    items = [draw(neutral)]
    for gap in range(len(decisive) + 1):
        if gap == at:
            items += ([extra] if extra else []) + [draw(neutral)]
        if gap < len(decisive):
            items += [decisive[gap], draw(neutral)]
    return items


@st.composite
def lesson_and_opposite(draw: st.DrawFn) -> tuple[str, str]:
    """A lesson of neutral and decisive words, and the same lesson with one antonym, negation or prefix applied."""
    chinese = draw(st.booleans())
    pairs = lexicon.ANTONYMS_ZH if chinese else lexicon.ANTONYMS_EN
    negators = (lexicon.NEGATORS_ZH if chinese else lexicon.NEGATORS_EN).split()
    poles = st.sampled_from(pairs).flatmap(lambda pair: st.sampled_from(pair)).map(str.split)
    decisive = draw(st.lists(poles.flatmap(st.sampled_from), max_size=3))
    change = draw(st.sampled_from(["antonym", "negation"] if chinese else ["antonym", "negation", "prefix"]))
    if change == "antonym":
        positive, negative = draw(st.sampled_from(pairs))
        original, opposite = draw(st.sampled_from(positive.split())), draw(st.sampled_from(negative.split()))
    elif change == "negation":
        original, opposite = None, draw(st.sampled_from(negators))
    else:
        original = draw(st.sampled_from(PREFIXABLE))
        opposite = draw(st.sampled_from(["un", "in", "non", "dis"])) + original
    at = draw(st.integers(0, len(decisive)))
    first = alternating(draw, chinese, original, at, decisive)
    second = list(first)
    # gap ``at`` starts after the first neutral word and ``at`` (decisive, neutral) pairs
    second[1 + 2 * at : 2 + 2 * at if original else 1 + 2 * at] = [opposite]
    joiner = "" if chinese else " "
    return joiner.join(first), joiner.join(second)


@given(lesson_and_opposite(), st.booleans())
def test_any_lesson_and_its_opposite_are_never_duplicates(pair: tuple[str, str], swap: bool) -> None:
    first, second = pair[::-1] if swap else pair
    assert not same_experience(first, second)
    assert find_jaccard_duplicate(second, [(1, first)], threshold=0.0) is None
    candidates = [
        Candidate(i, "observation", 0.8, 0, "2026-01-01", t) for i, t in enumerate([first, second, first])
    ]
    merges = plan_consolidation(candidates, 0.0).merges
    # the repeat merges, the opposite never
    assert [{m.representative, *m.merged} for m in merges] == [{0, 2}]


@st.composite
def lesson_and_variant(draw: st.DrawFn) -> tuple[str, str]:
    """An English lesson, and the same words in other letter case with punctuation between words."""
    forms = [form for pair in lexicon.ANTONYMS_EN for pole in pair for form in pole.split()]
    words = draw(st.lists(st.one_of(ANY_EN, st.sampled_from(forms)), min_size=1, max_size=10))
    cased = ["".join(c.upper() if draw(st.booleans()) else c for c in word) for word in words]
    pieces = [word + "".join(draw(st.lists(st.sampled_from(PUNCTUATION), max_size=2))) for word in cased]
    return " ".join(words), " ".join(pieces)


@given(lesson_and_variant())
def test_case_and_punctuation_variants_stay_duplicates(pair: tuple[str, str]) -> None:
    first, second = pair
    assert same_experience(first, second)
    found = find_jaccard_duplicate(second, [(1, first)], threshold=0.7)
    assert found is not None and found.existing_id == 1


@given(st.data())
def test_punctuation_between_chinese_words_keeps_the_polarity(data: st.DataObject) -> None:
    poles = st.sampled_from(lexicon.ANTONYMS_ZH).flatmap(lambda pair: st.sampled_from(pair)).map(str.split)
    decisive = data.draw(st.lists(poles.flatmap(st.sampled_from), max_size=3))
    items = alternating(data.draw, True, None, 0, decisive)
    marks = [data.draw(st.sampled_from(["", *PUNCTUATION])) for _ in items]
    assert same_experience("".join(items), "".join(i + m for i, m in zip(items, marks, strict=True)))
