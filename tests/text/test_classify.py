"""Regex auto-classification, including the seed's worked example."""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.strategies import hostile_text

from robotmem import RobotMemory
from robotmem.text import classify as classify_module
from robotmem.text.classify import build_context, classify, classify_perception
from robotmem.text.taxonomy import TAG_TREE


def test_seed_worked_example() -> None:
    found = classify("grip_force=12.5N works best because sensor was calibrated", {})
    assert found.category == "root_cause"
    assert found.confidence == 0.90
    assert found.scope_files == ()
    assert found.scope_entities == ("grip_force",)
    assert found.tags == ("root_cause", "observation")


@pytest.mark.parametrize(
    ("text", "category", "tag"),
    [
        ("Episode 3: failed, reward=-50, 50 steps", "episode", "failure"),
        ("grip_force=12.5N works best", "parameter", "observation"),
        ("never exceed 20 N on glass", "constraint", "safety"),
        ("夹爪力度不要超过20牛", "constraint", "safety"),
        ("因为地面湿滑，机器人在走廊里打滑", "root_cause", "navigation"),
        ("we decided to switch to the suction gripper", "decision", "grasping"),
        ("the lidar usually misses glass doors", "pattern", "perception"),
        ("watch out: the sim friction is higher than on the real robot", "gotcha", "sim2real"),
    ],
)
def test_robot_experience_lands_in_meaningful_categories(text: str, category: str, tag: str) -> None:
    found = classify(text, {})
    assert found.category == category
    assert tag in found.tags


def test_confidence_rises_with_rich_context_and_is_capped() -> None:
    context = {"params": {"f": 1}, "task": {"success": True}, "robot": {"id": "a"}}
    assert classify("the cup slipped", {}).confidence == 0.80
    assert classify("the cup slipped", context).confidence == 0.85
    assert classify("grip_force=5N slipped because the cup was wet", context).confidence == 0.95


def test_task_success_marks_success_or_failure() -> None:
    assert "success" in classify("pushed the block", {"task": {"success": True}}).tags
    assert "failure" in classify("pushed the block", {"task": {"success": False}}).tags


def test_params_found_in_text_fill_only_missing_entries() -> None:
    found = classify("grip_force=12.5N and speed=0.3 m/s", {})
    merged = build_context({"params": {"speed": {"value": 0.2, "unit": "m/s"}}}, found, source="learn")
    assert merged["params"] == {
        "speed": {"value": 0.2, "unit": "m/s"},
        "grip_force": {"value": 12.5, "unit": "N"},
    }
    assert merged["source"] == "learn"


def test_tag_tree_is_seeded_into_tag_meta(memory: RobotMemory) -> None:
    conn = sqlite3.connect(memory.path)
    rows = conn.execute("SELECT tag, parent, dimension FROM tag_meta").fetchall()
    conn.close()
    dimensions = {tag for tag, parent, _ in rows if parent is None}
    assert {
        "metacognition",
        "capability",
        "domain",
        "technique",
        "timing",
        "boundary",
        "experience",
        "self_defect",
        "reflection",
        "robotics",
    } == dimensions
    assert len(rows) - len(dimensions) >= 50
    assert sum(len(children) for children in TAG_TREE.values()) == len(rows) - len(dimensions)


def test_learned_tags_are_stored_as_auto(memory: RobotMemory) -> None:
    created = memory.learn("grip_force=12.5N works best because sensor was calibrated")
    conn = sqlite3.connect(memory.path)
    rows = conn.execute(
        "SELECT tag, source FROM memory_tags WHERE memory_id = ?", (created["memory_id"],)
    ).fetchall()
    conn.close()
    assert sorted(rows) == [("observation", "auto"), ("root_cause", "auto")]


PERCEPTION_TEXTS = [
    "Force-torque sample 12: fz=4.5 N, tz=0.3 Nm",
    "Camera frame 1: mug detected at 0.60 m, confidence 0.53.",
    "Gripper camera: the grasp failed because the cup slipped, see logs/run_3.yaml",
    "Lidar scan: the corridor is blocked; we decided to go around, it worked",
    "Wrist camera: pick up succeeded at grip_force=12 N",
    "相机画面：夹爪抓取杯子成功",
    "Episode 4 rollout: the push worked better than expected",
]


@given(st.one_of(st.sampled_from(PERCEPTION_TEXTS), hostile_text))
def test_perception_classification_matches_classify_after_the_category(text: str) -> None:
    general = classify(text, {})
    found = classify_perception(text)

    assert found.category == "perception"
    assert found.tags == general.tags[1:]
    assert (found.confidence, found.scope_files, found.scope_entities) == (
        general.confidence,
        general.scope_files,
        general.scope_entities,
    )


RULES = [
    getattr(classify_module, name)
    for name in ("_CAUSAL", "_OBSERVATION", "_UNIT_NUMBER", "_FAILURE_WORD", "_SUCCESS_WORD")
] + [rule for _, rule in (*classify_module._CATEGORY_RULES, *classify_module._TAG_RULES)]


def test_case_insensitive_rules_hold_no_upper_case_letter() -> None:
    for rule in RULES:
        assert not re.search(r"(?<!\\)[A-Z]", rule.any_case.pattern), rule.any_case.pattern


@given(st.one_of(st.sampled_from(PERCEPTION_TEXTS), st.text(st.characters(max_codepoint=127), max_size=80)))
def test_ascii_text_lower_cased_matches_like_ignorecase(text: str) -> None:
    if not text.isascii():
        return
    for rule in RULES:
        assert (rule.lower_case.search(text.lower()) is None) == (rule.any_case.search(text) is None)


def test_rule_alternatives_split_at_the_top_level_only() -> None:
    split = classify_module._alternatives
    assert split(r"\b(a|b)\b|[|(]x|c\|d|因为") == [r"\b(a|b)\b", "[|(]x", r"c\|d", "因为"]
    assert split(r"[]|]|[^]|]") == ["[]|]", "[^]|]"]
    for rule in RULES:
        assert "|".join(split(rule.any_case.pattern)) == rule.any_case.pattern
        assert len(split(rule.lower_case.pattern)) <= len(split(rule.any_case.pattern))
