"""The tag tree seeded into ``tag_meta``: nine dimensions from the seed plus a robotics dimension."""

from __future__ import annotations

TAG_TREE: dict[str, dict[str, str]] = {
    "metacognition": {
        "reasoning": "how a conclusion was reached",
        "cognitive_bias": "a systematic error in judgement",
        "decision_framework": "a way of choosing between options",
        "uncertainty": "what is not known and how much it matters",
        "mental_model": "a simplified picture of how something works",
    },
    "capability": {
        "build": "making something new",
        "debug": "finding why something fails",
        "design": "shaping a solution before building it",
        "review": "checking work",
        "architecture": "how parts of a system fit together",
        "testing": "showing that something works",
        "tuning": "adjusting parameters for better results",
    },
    "domain": {
        "cs_fundamentals": "algorithms, data structures, systems",
        "ai_ml": "learning systems and models",
        "robot_systems": "robots, their bodies and controllers",
        "control": "feedback control and dynamics",
        "hardware": "sensors, actuators, electronics",
        "finance": "money and markets",
    },
    "technique": {
        "patterns": "a solution that recurs",
        "anti_patterns": "a solution that recurs and fails",
        "recipes": "step-by-step procedures",
        "heuristics": "rules of thumb",
        "parameter": "a parameter value and its effect",
    },
    "timing": {
        "when_to_start": "the moment to begin",
        "when_to_stop": "the moment to stop or abort",
        "when_to_switch": "the moment to change approach",
    },
    "boundary": {
        "tradeoff": "a gain paid for with a loss",
        "constraint": "a limit that must hold",
        "not_applicable": "where a rule does not apply",
        "safety": "a limit that protects people, objects or the robot",
        "edge_case": "an unusual situation",
    },
    "experience": {
        "war_story": "a memorable episode",
        "postmortem": "an analysis after a failure",
        "gotcha": "a surprising pitfall",
        "root_cause": "why something happened",
        "observation": "something that was seen to happen",
        "episode": "the record of one attempt at a task",
        "success": "an attempt that reached its goal",
        "failure": "an attempt that did not reach its goal",
    },
    "self_defect": {
        "hallucination": "stating something that is not so",
        "sycophancy": "agreeing instead of being right",
        "overengineering": "more machinery than the problem needs",
        "overconfidence": "certainty beyond the evidence",
        "premature_action": "acting before looking",
    },
    "reflection": {
        "accuracy_calibration": "how well confidence matched outcomes",
        "behavior_rule": "a rule for future behaviour",
        "preference": "a preferred way of doing something",
        "lesson": "what to do differently next time",
        "decision": "a choice that was made",
        "revert": "a change that was undone",
    },
    "robotics": {
        "manipulation": "moving objects with an arm or hand",
        "grasping": "closing a gripper on an object",
        "pushing": "moving an object by contact without grasping",
        "navigation": "moving a robot base through space",
        "locomotion": "legged or wheeled movement",
        "perception": "cameras, lidar, depth and other sensing",
        "sim2real": "the gap between simulation and the real robot",
        "calibration": "aligning sensors and actuators with reality",
        "trajectory": "a path through space or joint space over time",
        "collision": "unwanted contact",
    },
}


def tag_rows() -> list[tuple[str, str | None, str, str]]:
    """Return ``(tag, parent, dimension, description)`` rows: dimensions first, then their children."""
    rows: list[tuple[str, str | None, str, str]] = []
    for dimension in TAG_TREE:
        rows.append((dimension, None, dimension, f"dimension: {dimension}"))
    for dimension, children in TAG_TREE.items():
        for tag, description in children.items():
            rows.append((tag, dimension, dimension, description))
    return rows
