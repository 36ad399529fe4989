"""Regex auto-classification of an insight: category, confidence, scope, tags and parameters.

No model and no I/O: every rule is a compiled pattern, English and Chinese side by side, so a call
takes well under a millisecond. The first category rule that matches wins (order below).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

BASE_CONFIDENCE = 0.80
SIGNAL_BONUS = 0.05
MAX_CONFIDENCE = 0.95
ROBOT_SECTIONS = ("params", "spatial", "robot", "task")


class _Rule:
    """A case-insensitive pattern; ASCII text is searched lower-cased with a case-sensitive copy.

    That is about twice as fast as IGNORECASE, and gives the same answer because the patterns hold no
    upper-case letter and, in ASCII text, IGNORECASE pairs only ``a-z`` with ``A-Z``. The copy also
    leaves out the alternatives that start with a required non-ASCII character (the Chinese ones):
    they cannot match ASCII text, and each costs a try at every position.
    """

    __slots__ = ("any_case", "lower_case")

    def __init__(self, pattern: str) -> None:
        self.any_case = re.compile(pattern, re.IGNORECASE)
        latin = [
            part for part in _alternatives(pattern) if part[:1].isascii() or part[1:2] in ("?", "*", "{")
        ]
        self.lower_case = re.compile("|".join(latin) if latin else "(?!)")


def _alternatives(pattern: str) -> list[str]:
    """Return the top-level alternatives of a regular expression (``"|".join`` gives it back)."""
    parts: list[str] = []
    depth, start, position, in_class = 0, 0, 0, False
    while position < len(pattern):
        char = pattern[position]
        if char == "\\":
            position += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            position += 2 if pattern[position + 1 : position + 2] == "^" else 1
            position += 1 if pattern[position : position + 1] == "]" else 0  # a leading ] is literal
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:position])
            start = position + 1
        position += 1
    parts.append(pattern[start:])
    return parts


def _rx(pattern: str) -> _Rule:
    return _Rule(pattern)


def _matcher(text: str) -> Callable[[_Rule], bool]:
    """Return a test of whether a rule matches somewhere in ``text``."""
    if text.isascii():
        lowered = text.lower()
        return lambda rule: rule.lower_case.search(lowered) is not None
    return lambda rule: rule.any_case.search(text) is not None


_CAUSAL = _rx(
    r"\b(because|due to|caused by|root cause|the reason|as a result of|results? from)\b|因为|由于|导致|原因"
)
_CATEGORY_RULES: tuple[tuple[str, _Rule], ...] = (
    (
        "self_defect",
        _rx(r"\b(i|we) (hallucinated|assumed wrongly|was wrong|made a mistake)\b|my mistake|我(搞错|误以为)"),
    ),
    (
        "constraint",
        _rx(
            r"\b(never|must not|must never|do not exceed|don't exceed|must stay|must be (below|under|above|within)|"
            r"not (exceed|go above|go below)|at most|no more than|hard limit|safety limit|limit of)\b"
            r"|禁止|不得|不能超过|不要超过|不可超过|必须|上限|下限"
        ),
    ),
    ("revert", _rx(r"\b(revert(ed)?|roll(ed)? back|undo(ne)?)\b|回滚|撤销")),
    ("postmortem", _rx(r"\b(postmortem|post-mortem|incident|outage)\b|事故|复盘")),
    (
        "gotcha",
        _rx(r"\b(gotcha|watch out|beware|pitfall|caveat|surprisingly|counter-intuitive)\b|注意|小心|坑"),
    ),
    ("root_cause", _CAUSAL),
    (
        "episode",
        _rx(r"\b(episode|trial|rollout|run)\s*#?\d+|^episode\b|第\s*\d+\s*(回合|轮|次试验)|回合\s*\d+"),
    ),
    ("tradeoff", _rx(r"\b(trade-?offs?|at the cost of|at the expense of|versus|vs\.?)\b|权衡|代价|取舍")),
    (
        "decision",
        _rx(r"\b(decided|decide to|chose|choose to|going with|we will use|switched to)\b|决定|选择了|改用"),
    ),
    ("preference", _rx(r"\b(prefer(red|s)?|rather than|better to|instead of)\b|偏好|更喜欢|宁愿|最好用")),
    (
        "parameter",
        _rx(
            r"[a-z_][\w.]*\s*=\s*-?\d|\b(set|tune[d]?|use|using)\b.{0,40}\b(to|at|of)\s*-?\d"
            r"|\d\s*(n|nm|mm|cm|m|m/s|rad|rad/s|deg|°|hz|kg|g|ms|s|%)\b.{0,40}\b(works?|worked|best|optimal|yields?)\b"
            r"|设为|设置为|调到|调为"
        ),
    ),
    (
        "pattern",
        _rx(r"\b(usually|tends? to|often|whenever|typically|in most cases|every time)\b|通常|往往|每当|一般"),
    ),
    ("architecture", _rx(r"\b(architecture|module|component|layer|pipeline|interface)\b|架构|模块|组件")),
    ("config", _rx(r"\b(config(uration)?|setting|flag|env(ironment)? var(iable)?|yaml|launch file)\b|配置")),
    ("worldview", _rx(r"\b(principle|i believe|we believe|in general|philosophy)\b|原则|相信")),
)
# Every category a memory can carry: the rules' own, ``observation`` (no rule matched) and
# ``perception`` (save_perception). Import refuses any other.
CATEGORIES: tuple[str, ...] = (*(name for name, _ in _CATEGORY_RULES), "observation", "perception")
_OBSERVATION = _rx(
    r"\b(works?|worked|yields?|yielded|observed|noticed|succeeded|succeeds|failed|fails|slipped|dropped|"
    r"reached|collided|results? in|best|worse|better|highest|lowest)\b|成功|失败|最好|效果|表现|观察"
)
_TAG_RULES: tuple[tuple[str, _Rule], ...] = (
    ("grasping", _rx(r"\b(grasp\w*|gripper\w*|pick(ed|ing)? up|pinch)\b|抓取|夹爪|抓握")),
    ("pushing", _rx(r"\b(push(ed|es|ing)?)\b|推")),
    (
        "manipulation",
        _rx(
            r"\b(manipulat\w*|place[ds]?|placing|pick(ed|ing)?|insert(ion)?|stack(ing)?)\b|操作|放置|抓取|推动"
        ),
    ),
    (
        "navigation",
        _rx(r"\b(navigat\w*|waypoints?|path planning|corridor|doorway|odometry|slam)\b|导航|路径规划|走廊"),
    ),
    ("locomotion", _rx(r"\b(gait|walk(ing)?|locomotion|stairs|legged|stride)\b|步态|行走|楼梯")),
    (
        "perception",
        _rx(
            r"\b(camera|lidar|depth (image|map|noise)|point cloud|vision|exposure|detector)\b|相机|激光雷达|视觉|点云"
        ),
    ),
    ("sim2real", _rx(r"\b(sim2real|sim-to-real|reality gap|in simulation|on the real robot)\b|仿真|真机")),
    (
        "safety",
        _rx(
            r"\b(safety|unsafe|emergency stop|e-stop|never exceed|do not exceed|hazard)\b|安全|急停|不要超过|不得超过"
        ),
    ),
    ("collision", _rx(r"\b(collid\w*|collision|bump(ed)?|crash(ed)?)\b|碰撞|撞")),
    ("trajectory", _rx(r"\b(trajector\w*|waypoint path|joint path)\b|轨迹")),
    ("tuning", _rx(r"\b(tun(e|ed|ing)|sweep|optimi[sz]e[d]?)\b|调参|调优")),
)
_PARAM = re.compile(
    r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*=\s*"
    r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-zµ°%][A-Za-z0-9µ°%/^*]*)?"
)
_FILE = re.compile(
    r"(?<![\w/])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.(?:py|yaml|yml|json|urdf|xml|launch|cfg|toml|csv|npz))\b"
)
_UNIT_NUMBER = _rx(r"\d\s*(?:(?:n|nm|mm|cm|m/s|rad|deg|hz|kg)\b|°|牛|毫米|厘米|米|度|赫兹)")
_FAILURE_WORD = _rx(r"\b(failed|failure|unsuccessful)\b|失败")
_SUCCESS_WORD = _rx(r"\b(succeeded|successful|success)\b|成功")
_IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\b")


@dataclass(frozen=True, slots=True)
class Classification:
    """What auto-classification inferred for one text."""

    category: str
    confidence: float
    tags: tuple[str, ...]
    scope_files: tuple[str, ...]
    scope_entities: tuple[str, ...]
    params: dict[str, dict[str, Any]]


def classify_category(text: str) -> str:
    """Return the first category whose rule matches ``text`` (``observation`` when none does)."""
    return _category(_matcher(text))


def _category(matches: Callable[[_Rule], bool]) -> str:
    for category, rule in _CATEGORY_RULES:
        if matches(rule):
            return category
    return "observation"


def extract_params(text: str) -> dict[str, dict[str, Any]]:
    """Return ``name=value unit`` findings as params entries, e.g. ``{"grip_force": {"value": 12.5, "unit": "N"}}``."""
    return _params(_PARAM.findall(text))


def _params(matches: list[tuple[str, str, str]]) -> dict[str, dict[str, Any]]:
    """Return ``name → {"value", "unit"?}`` of ``name=value unit`` findings.

    A dotted name (``arm.speed=0.5``) is stored as ``arm_speed``: a filter path reads a dot as a step
    into a nested object, so ``params.arm_speed`` is the path that reaches it.
    """
    found: dict[str, dict[str, Any]] = {}
    for dotted, raw_value, unit in matches:
        name = dotted.replace(".", "_")
        value = float(raw_value)
        entry: dict[str, Any] = {
            "value": int(value) if value.is_integer() and "." not in raw_value else value
        }
        if unit:
            entry["unit"] = unit
        found.setdefault(name, entry)
    return found


def extract_scope(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return ``(scope_files, scope_entities)``: file paths, and identifiers such as ``grip_force``."""
    return _scope(text, _PARAM.findall(text))


def _scope(text: str, params: list[tuple[str, str, str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    files = tuple(dict.fromkeys(_FILE.findall(text)))
    names = [match for match in _IDENTIFIER.findall(text)]
    names += [name for name, _, _ in params]
    entities = tuple(name for name in dict.fromkeys(names) if not any(name in path for path in files))
    return files, entities


def estimate_confidence(text: str, context: Mapping[str, Any]) -> float:
    """Return 0.80 plus 0.05 per signal (causal word, concrete parameter or path, rich context), at most 0.95."""
    files, _ = extract_scope(text)
    return _confidence(_matcher(text), context, _PARAM.search(text) is not None, files)


def _confidence(
    matches: Callable[[_Rule], bool], context: Mapping[str, Any], has_param: bool, files: tuple[str, ...]
) -> float:
    signals = 0
    if matches(_CAUSAL):
        signals += 1
    if has_param or files or matches(_UNIT_NUMBER):
        signals += 1
    if sum(1 for section in ROBOT_SECTIONS if context.get(section)) >= 2:
        signals += 1
    return round(min(MAX_CONFIDENCE, BASE_CONFIDENCE + SIGNAL_BONUS * signals), 2)


def classify_tags(text: str, category: str, context: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the category's tag, ``observation`` for reported results, robotics tags, and success/failure."""
    return _tags(_matcher(text), category, context)


def _tags(matches: Callable[[_Rule], bool], category: str, context: Mapping[str, Any]) -> tuple[str, ...]:
    tags = [category]
    if category != "observation" and matches(_OBSERVATION):
        tags.append("observation")
    tags.extend(_subject_tags(matches, context))
    return tuple(dict.fromkeys(tags))


def _subject_tags(matches: Callable[[_Rule], bool], context: Mapping[str, Any]) -> list[str]:
    """Return the robotics tags and success/failure (names no category shares)."""
    tags = [tag for tag, rule in _TAG_RULES if matches(rule)]
    task = context.get("task")
    if isinstance(task, dict) and isinstance(task.get("success"), bool):
        tags.append("success" if task["success"] else "failure")
    elif matches(_FAILURE_WORD):
        tags.append("failure")
    elif matches(_SUCCESS_WORD):
        tags.append("success")
    return tags


def classify(text: str, context: Mapping[str, Any]) -> Classification:
    """Run every classifier on ``text`` with its user ``context``."""
    matches = _matcher(text)
    category = _category(matches)
    params = _PARAM.findall(text)
    files, entities = _scope(text, params)
    return Classification(
        category=category,
        confidence=_confidence(matches, context, bool(params), files),
        tags=_tags(matches, category, context),
        scope_files=files,
        scope_entities=entities,
        params=_params(params),
    )


def classify_perception(text: str) -> Classification:
    """Return ``classify(text, {})`` for a perception, whose category is fixed.

    The category is ``perception`` and the tags are those ``classify`` gives after its category tag. The
    category rules then only decide whether ``observation`` is among them, so they run only when the
    observation rule matches. Params are not extracted (a perception stores none).
    """
    matches = _matcher(text)
    params = _PARAM.findall(text)
    files, entities = _scope(text, params)
    observed = matches(_OBSERVATION) and any(matches(rule) for _, rule in _CATEGORY_RULES)
    return Classification(
        category="perception",
        confidence=_confidence(matches, {}, bool(params), files),
        tags=tuple(["observation"] * observed + _subject_tags(matches, {})),
        scope_files=files,
        scope_entities=entities,
        params={},
    )


def build_context(user_context: Mapping[str, Any], found: Classification, source: str) -> dict[str, Any]:
    """Return the stored context: the user's, plus params found in the text that it lacks, plus a source marker."""
    merged = dict(user_context)
    if found.params:
        params = dict(merged["params"]) if isinstance(merged.get("params"), dict) else {}
        for name, entry in found.params.items():
            params.setdefault(name, entry)
        if params or "params" in merged:
            merged["params"] = params
    merged.setdefault("source", source)
    return merged
