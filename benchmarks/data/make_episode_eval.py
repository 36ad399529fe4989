"""Build benchmarks/data/episode_eval.jsonl, the multi-session experience-log evaluation set.

Run from the repository root:  python benchmarks/data/make_episode_eval.py

Twelve experience logs (one collection each: grasping, assembly, pouring, corridor navigation, ...), six in
English and six in Chinese. A log holds eight sessions of one robot task; every session is an episode of
seven steps stored in order under one ``session``: set-up, first attempt with parameters, what went wrong,
what was changed right after, second attempt, outcome, lesson. The lessons of sessions 4–7 correct the
lessons of sessions 0–3 on the same object (contradictions). Dates, places and robot ids live in each
memory's context; only the set-up step names the place in its text, and no text names the date.

The text is built from templates and seeded choices, and every query is written from the facts of the log
it asks about, so its gold set follows from construction; a build check re-derives each gold set from the
documents' contexts and refuses to write a set whose checks fail. Query types (``tags``): ``paraphrase``
(a re-worded description of what went wrong; gold: that step), ``entity`` (names a date, robot, place or
object; gold: the outcome steps of the matching sessions), ``neighbour`` (describes what went wrong and
asks what was done next; gold: the following step, which shares no description with the query),
``contradiction`` (asks for the setting that holds now; gold: the later correction, not the lesson it
overrides) and ``parameter`` (only parameter values; gold: the attempt with exactly those values).
Queries carry a fixed ``split`` by log: ``tune`` (choose settings) or ``heldout`` (confirm them).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent / "episode_eval.jsonl"
SEED = 20261204
SESSIONS = 8
HELDOUT = frozenset({"drawer", "cables", "pouring", "drone", "delivery", "docking"})

# ---- what goes wrong: (description, paraphrase, what was done right after), in English and Chinese ----
# The description takes the session's object; the paraphrase shares no content word with it.

MANIPULATION_EN = [
    (
        "the {o} slipped out of the gripper fingers during the lift",
        "the item fell from the hand as it went up",
        "swapped to high-friction silicone pads and halved the lift acceleration",
    ),
    (
        "camera glare on the {o} hid its edges and the grasp pose was off by 2 cm",
        "bright reflections blinded the vision so the hand aimed wrong",
        "turned on the polarising filter and lowered the exposure",
    ),
    (
        "the wrist hit the shelf edge next to the {o} on approach",
        "the arm bumped into nearby furniture while reaching",
        "raised the approach waypoint by 8 cm and cut joint speed",
    ),
    (
        "too much squeeze dented the {o}",
        "the hand deformed the item by pressing excessively",
        "capped the closing current and enabled force feedback",
    ),
    (
        "the {o} jammed half-way because it was tilted 5 degrees",
        "the part got stuck partway since it sat crooked",
        "added a compliant wiggle motion and re-centred with the wrist camera",
    ),
    (
        "joint 4 hit its torque limit holding the {o} at full reach",
        "an elbow motor overloaded when the load was held far out",
        "moved the base closer so the payload stays near the body",
    ),
    (
        "the detector missed the {o} under low light",
        "vision did not find the item in the dim room",
        "switched on the ring light and retrained on dark images",
    ),
    (
        "the planner timed out finding a path around the {o}",
        "motion planning gave up before a route was ready",
        "simplified the collision meshes and gave the solver 3 s",
    ),
]

MANIPULATION_ZH = [
    ("抬起时{o}从夹爪手指间滑落", "东西往上走的时候掉了", "换成高摩擦硅胶垫并把提升加速度减半"),
    ("{o}上的相机反光遮住了边缘，抓取位姿偏了2 cm", "强烈亮光让视觉失明，手瞄歪了", "打开偏振滤镜并降低曝光"),
    ("接近时手腕撞到{o}旁边的货架边缘", "机械臂伸出去碰到了附近家具", "把接近路点抬高8 cm并降低关节速度"),
    ("夹得太紧把{o}压凹了", "用力过猛让物品变形", "限制闭合电流并启用力反馈"),
    ("{o}倾斜5度，插到一半卡住了", "零件歪着放，中途动不了", "加入柔顺摆动动作并用腕部相机重新对中"),
    ("伸到最远处拿着{o}时4号关节达到扭矩上限", "负载举得太远，肘部电机过载", "把底座挪近，让负载靠近身体"),
    ("光线暗时检测器没有识别出{o}", "昏暗房间里视觉找不到物品", "打开环形灯并用暗光图像重新训练"),
    ("规划器绕开{o}找路径时超时", "运动规划还没算出路线就放弃了", "简化碰撞网格并给求解器3 s"),
]

MOBILE_EN = [
    (
        "the robot slid on the wet floor near the {o}",
        "the base skidded across a slick surface",
        "dropped top speed to 0.3 m/s and raised tyre pressure",
    ),
    (
        "the lidar did not see the glass wall by the {o}",
        "the laser scanner looked straight through a transparent pane",
        "added the pane to the keep-out map and fused the sonar",
    ),
    (
        "localisation jumped 1.5 m near the {o} and the robot stopped",
        "the position estimate suddenly teleported and motion halted",
        "placed two extra AprilTag markers and re-tuned AMCL",
    ),
    (
        "battery dropped to 12% before reaching the {o}",
        "charge ran nearly empty mid route",
        "scheduled a charging stop after every third lap",
    ),
    (
        "a person stood in front of the {o} for 40 s",
        "a human blocked the way for most of a minute",
        "enabled the polite-wait behaviour and a re-route after 15 s",
    ),
    (
        "wifi dropped by the {o} and the teleop link froze",
        "the wireless connection died so remote control hung",
        "installed a mesh repeater and cached the mission onboard",
    ),
    (
        "the robot tilted 18 degrees on the ramp beside the {o}",
        "it nearly tipped over on a slope",
        "lowered the centre of mass and limited incline speed",
    ),
    (
        "a phantom obstacle appeared in the costmap at the {o}",
        "the planner saw a blockage that was not really there",
        "cleared the obstacle layer every 5 s and raised the marking threshold",
    ),
]

MOBILE_ZH = [
    ("机器人在{o}附近的湿地板上打滑", "底盘在光滑表面上侧移", "把最高速度降到0.3 m/s并提高胎压"),
    ("激光雷达没有看到{o}旁边的玻璃墙", "激光扫描仪直接穿过了透明面板", "把面板加入禁行地图并融合声呐"),
    ("在{o}附近定位跳了1.5 m，机器人停下", "位置估计突然瞬移，运动中止", "增加两个AprilTag标记并重新调AMCL"),
    ("到达{o}之前电量降到12%", "半路上电快用完了", "安排每跑三圈停一次充电"),
    ("有人在{o}前面站了40 s", "一个行人挡路将近一分钟", "启用礼让等待行为，15 s后改道"),
    ("在{o}那里wifi断了，遥操作链路卡住", "无线连接中断，远程控制没有响应", "安装mesh中继并把任务缓存在本机"),
    ("机器人在{o}旁边的坡道上倾斜18度", "它在斜面上差点翻倒", "降低重心并限制爬坡速度"),
    ("代价地图在{o}处出现幻影障碍物", "规划器看到一个并不存在的阻挡", "每5 s清空障碍层并提高标记阈值"),
]


@dataclass(frozen=True, slots=True)
class Param:
    name: str  # as written in memories: grip_force
    words: tuple[str, str]  # how a question names it: ("grip force", "夹持力")
    unit: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Domain:
    slug: str
    lang: str
    family: str  # manipulation | mobile
    task: str  # task.name in contexts
    task_words: str  # how the set-up step names the task
    robots: tuple[tuple[str, str], tuple[str, str]]  # (id, type) ×2, alternating by session
    objects: tuple[str, str, str, str]  # session i handles objects[i % 4]
    places: tuple[str, str, str]
    params: tuple[Param, Param]


def _grid(start: float, step: float, count: int = 16) -> tuple[float, ...]:
    return tuple(round(start + step * i, 3) for i in range(count))


DOMAINS = [
    Domain(
        "grasping",
        "en",
        "manipulation",
        "grasp_household",
        "grasping household objects",
        (("franka-02", "Franka Panda"), ("ur5e-01", "UR5e")),
        ("ceramic mug", "plastic bottle", "cereal box", "glass jar"),
        ("kitchen bench", "lab bay 2", "sink counter"),
        (
            Param("grip_force", ("grip force", "夹持力"), "N", _grid(6, 1.5)),
            Param("approach_speed", ("approach speed", "接近速度"), "m/s", _grid(0.02, 0.01)),
        ),
    ),
    Domain(
        "assembly",
        "zh",
        "manipulation",
        "peg_insertion",
        "装配销钉与轴承",
        (("ur10-03", "UR10"), ("kuka-01", "KUKA iiwa")),
        ("铝销钉", "轴承座", "齿轮轴", "塑料卡扣"),
        ("装配工位一", "测试台", "二号产线"),
        (
            Param("insert_force", ("insert force", "插入力"), "N", _grid(10, 2.5)),
            Param("search_radius", ("search radius", "搜索半径"), "mm", _grid(1, 0.5)),
        ),
    ),
    Domain(
        "picking",
        "en",
        "manipulation",
        "bin_picking",
        "picking parcels from a bin",
        (("abb-05", "ABB YuMi"), ("fanuc-02", "Fanuc CRX")),
        ("padded envelope", "shoe box", "bubble pouch", "tin can"),
        ("induction station", "returns cell", "bin wall 3"),
        (
            Param("suction_pressure", ("suction pressure", "吸附压力"), "kPa", _grid(40, 3)),
            Param("lift_height", ("lift height", "提升高度"), "cm", _grid(5, 1)),
        ),
    ),
    Domain(
        "pouring",
        "zh",
        "manipulation",
        "pour_liquid",
        "倒水和倒豆子",
        (("xarm-07", "xArm 7"), ("franka-05", "Franka Panda")),
        ("玻璃杯", "不锈钢壶", "纸杯", "量筒"),
        ("厨房台面", "实验室水槽", "咖啡角"),
        (
            Param("tilt_rate", ("tilt rate", "倾倒速度"), "deg/s", _grid(5, 1.5)),
            Param("pour_height", ("pour height", "倾倒高度"), "cm", _grid(3, 0.5)),
        ),
    ),
    Domain(
        "drawer",
        "en",
        "manipulation",
        "open_drawer",
        "opening drawers and cabinet doors",
        (("stretch-01", "Hello Robot Stretch"), ("tiago-02", "TIAGo")),
        ("top drawer", "fridge door", "tool cabinet", "oven door"),
        ("apartment kitchen", "workshop", "office pantry"),
        (
            Param("pull_force", ("pull force", "拉力"), "N", _grid(15, 2)),
            Param("handle_offset", ("handle offset", "把手偏移"), "cm", _grid(1, 0.4)),
        ),
    ),
    Domain(
        "cables",
        "zh",
        "manipulation",
        "route_cable",
        "布线和插接线缆",
        (("yumi-02", "ABB YuMi"), ("ur3-04", "UR3e")),
        ("网线", "电源线", "排线", "光纤跳线"),
        ("机柜前", "线束台", "三号工位"),
        (
            Param("tension", ("cable tension", "线缆张力"), "N", _grid(2, 0.5)),
            Param("clip_spacing", ("clip spacing", "卡扣间距"), "cm", _grid(8, 1)),
        ),
    ),
    Domain(
        "corridor",
        "zh",
        "mobile",
        "corridor_navigation",
        "走廊巡航和过门",
        (("tb3-04", "TurtleBot3"), ("jackal-02", "Clearpath Jackal")),
        ("消防门", "电梯口", "玻璃隔断", "楼梯间"),
        ("三楼走廊", "一楼大厅", "地下车库"),
        (
            Param("max_speed", ("max speed", "最高速度"), "m/s", _grid(0.3, 0.05)),
            Param("inflation_radius", ("inflation radius", "膨胀半径"), "m", _grid(0.2, 0.05)),
        ),
    ),
    Domain(
        "warehouse",
        "en",
        "mobile",
        "tote_delivery",
        "delivering totes across the warehouse",
        (("amr-11", "MiR250"), ("amr-14", "OTTO 100")),
        ("packing station", "loading dock", "mezzanine lift", "cold room door"),
        ("aisle 7", "zone B", "shipping bay"),
        (
            Param("cruise_speed", ("cruise speed", "巡航速度"), "m/s", _grid(0.8, 0.05)),
            Param("stop_distance", ("stop distance", "停车距离"), "m", _grid(0.4, 0.05)),
        ),
    ),
    Domain(
        "quadruped",
        "zh",
        "mobile",
        "terrain_walk",
        "四足机器人野外行走",
        (("go1-01", "Unitree Go1"), ("spot-03", "Boston Dynamics Spot")),
        ("碎石坡", "草地", "台阶", "泥地"),
        ("后山", "校园操场", "试验场"),
        (
            Param("step_height", ("step height", "抬腿高度"), "cm", _grid(6, 0.5)),
            Param("gait_frequency", ("gait frequency", "步频"), "Hz", _grid(1.5, 0.1)),
        ),
    ),
    Domain(
        "drone",
        "en",
        "mobile",
        "bridge_inspection",
        "inspecting a bridge with a drone",
        (("uav-06", "Skydio 2"), ("uav-09", "DJI M300")),
        ("north pier", "deck underside", "cable stay", "expansion joint"),
        ("river bridge", "rail viaduct", "harbour crossing"),
        (
            Param("standoff", ("standoff distance", "悬停距离"), "m", _grid(2, 0.25)),
            Param("gimbal_pitch", ("gimbal pitch", "云台俯仰"), "deg", _grid(-40, 2.5)),
        ),
    ),
    Domain(
        "docking",
        "zh",
        "mobile",
        "auto_docking",
        "自动回充对桩",
        (("clean-02", "扫地机器人"), ("amr-21", "AgileX Scout")),
        ("充电桩", "墙角", "沙发底", "门槛"),
        ("客厅", "机房", "仓库东区"),
        (
            Param("align_speed", ("align speed", "对准速度"), "m/s", _grid(0.05, 0.01)),
            Param("dock_angle", ("dock angle", "对桩角度"), "deg", _grid(2, 0.5)),
        ),
    ),
    Domain(
        "delivery",
        "en",
        "mobile",
        "hospital_delivery",
        "delivering medicine in the hospital",
        (("moxi-01", "Moxi"), ("tug-04", "Aethon TUG")),
        ("pharmacy counter", "ward 4 nurses desk", "service elevator", "lab reception"),
        ("east wing", "basement corridor", "surgery floor"),
        (
            Param("corridor_speed", ("corridor speed", "走廊速度"), "m/s", _grid(0.5, 0.05)),
            Param("wait_timeout", ("wait timeout", "等待超时"), "s", _grid(10, 2)),
        ),
    ),
]


def _fmt(value: float) -> str:
    return f"{value:g}"


def _params_text(params: dict[str, tuple[float, str]]) -> str:
    return ", ".join(f"{name}={_fmt(v)} {unit}" for name, (v, unit) in params.items())


def _params_context(params: dict[str, tuple[float, str]]) -> dict[str, Any]:
    return {name: {"value": v, "unit": unit} for name, (v, unit) in params.items()}


@dataclass
class Step:
    """One memory of a session, with what the questions and checks need to know about it."""

    id: str
    text: str
    context: dict[str, Any]
    session: str
    kind: str  # setup | attempt1 | problem | change | attempt2 | outcome | lesson
    index: int  # session index in its log


def build_log(
    domain: Domain, rng: random.Random, first_date: date
) -> tuple[list[Step], list[dict[str, Any]]]:
    """Return the steps of one log and its queries (gold ids by construction)."""
    zh = domain.lang == "zh"
    causes = (
        (MANIPULATION_ZH if zh else MANIPULATION_EN)
        if domain.family == "manipulation"
        else (MOBILE_ZH if zh else MOBILE_EN)
    )
    order = list(range(8))
    rng.shuffle(order)  # session i goes wrong in way causes[order[i]]: each way once per log
    p1, p2 = domain.params
    values1 = list(p1.values)
    values2 = list(p2.values)
    rng.shuffle(values1)
    rng.shuffle(values2)
    steps: list[Step] = []
    sessions: list[dict[str, Any]] = []
    day = first_date
    for i in range(SESSIONS):
        day = day + timedelta(days=rng.randint(1, 4))
        robot_id, robot_type = domain.robots[i % 2]
        obj = domain.objects[i % 4]
        place = domain.places[rng.randrange(3)]
        episode = 10 * (DOMAINS.index(domain) + 1) + i + 1
        session = f"{domain.slug}-s{i}"
        success = rng.random() < 0.6
        attempts = 2
        total_steps = rng.randint(25, 90)
        base = {
            "robot": {"id": robot_id, "type": robot_type},
            "task": {"name": domain.task, "episode": episode},
            "object": obj,
            "place": place,
            "date": day.isoformat(),
        }
        first = {p1.name: (values1[2 * i], p1.unit), p2.name: (values2[2 * i], p2.unit)}
        second = {p1.name: (values1[2 * i + 1], p1.unit), p2.name: (values2[2 * i + 1], p2.unit)}
        problem, _, change = causes[order[i]]
        lesson_value = first[p1.name][0] if i < 4 else None
        if zh:
            texts = {
                "setup": f"第 {episode} 回合开始：{robot_type}在{place}进行{domain.task_words}，对象是{obj}。",
                "attempt1": f"第 {episode} 回合第一次尝试{obj}：{_params_text(first)}。",
                "problem": problem.format(o=obj) + "。",
                "change": change + "。",
                "attempt2": f"第 {episode} 回合第二次尝试：{_params_text(second)}。",
                "outcome": f"第 {episode} 回合结束：{'成功' if success else '失败'}，共 {attempts} 次尝试，{total_steps} 步。",
            }
        else:
            texts = {
                "setup": f"Episode {episode} set-up: {robot_type} at the {place}, {domain.task_words}, "
                f"working on the {obj}.",
                "attempt1": f"Episode {episode} first attempt on the {obj}: {_params_text(first)}.",
                "problem": problem.format(o=obj)[0].upper() + problem.format(o=obj)[1:] + ".",
                "change": change[0].upper() + change[1:] + ".",
                "attempt2": f"Episode {episode} second attempt: {_params_text(second)}.",
                "outcome": f"Episode {episode} finished: {'success' if success else 'failure'} after "
                f"{attempts} attempts, {total_steps} steps.",
            }
        if i < 4:
            texts["lesson"] = (
                f"经验：对{obj}来说，{p1.name}={_fmt(lesson_value or 0)} {p1.unit}就够了。"
                if zh
                else f"Lesson: for the {obj}, {p1.name}={_fmt(lesson_value or 0)} {p1.unit} is enough."
            )
        else:
            earlier = sessions[i - 4]["lesson_value"]
            corrected = round(earlier + 3 * (p1.values[1] - p1.values[0]), 3)
            texts["lesson"] = (
                f"更正之前的经验：{p1.name}={_fmt(earlier)} {p1.unit}对{obj}不够，要用 {_fmt(corrected)} {p1.unit}。"
                if zh
                else f"Correction to an earlier lesson: {p1.name}={_fmt(earlier)} {p1.unit} was not enough "
                f"for the {obj}; use {_fmt(corrected)} {p1.unit}."
            )
        kinds = ["setup", "attempt1", "problem", "change", "attempt2", "outcome", "lesson"]
        ids = {}
        for position, kind in enumerate(kinds):
            context = json.loads(json.dumps(base))
            context["step"] = position
            if kind == "attempt1":
                context["params"] = _params_context(first)
            elif kind == "attempt2":
                context["params"] = _params_context(second)
            elif kind == "outcome":
                context["task"]["success"] = success
                context["task"]["steps"] = total_steps
            ids[kind] = f"{domain.slug}-s{i}-{kind}"
            steps.append(Step(ids[kind], texts[kind], context, session, kind, i))
        sessions.append(
            {
                "ids": ids,
                "robot": robot_id,
                "object": obj,
                "place": place,
                "date": day.isoformat(),
                "cause": order[i],
                "first": first,
                "second": second,
                "lesson_value": lesson_value,
            }
        )
    return steps, build_queries(domain, causes, sessions, steps, rng)


def build_queries(
    domain: Domain,
    causes: list[tuple[str, str, str]],
    sessions: list[dict[str, Any]],
    steps: list[Step],
    rng: random.Random,
) -> list[dict[str, Any]]:
    zh = domain.lang == "zh"
    p1, p2 = domain.params
    out: list[dict[str, Any]] = []

    def add(kind: str, text: str, gold: list[str]) -> None:
        out.append({"type": kind, "query": text, "gold": gold})

    # paraphrase: sessions 2..7
    for s in sessions[2:]:
        para = causes[s["cause"]][1]
        add("paraphrase", f"什么时候{para}？" if zh else f"When was it that {para}?", [s["ids"]["problem"]])
    # neighbour: sessions 0..5 — the question describes the problem and asks for the next step
    for s in sessions[:6]:
        problem = causes[s["cause"]][0].format(o=s["object"])
        add(
            "neighbour",
            f"{problem}之后紧接着做了什么调整？" if zh else f"What was changed right after {problem}?",
            [s["ids"]["change"]],
        )
    # entity: three by date, two by robot and object, one by place and robot
    for s in [sessions[k] for k in sorted(rng.sample(range(SESSIONS), 3))]:
        add(
            "entity",
            f"{s['date']}那次运行的结果如何？" if zh else f"What was the result of the run on {s['date']}?",
            [t["ids"]["outcome"] for t in sessions if t["date"] == s["date"]],
        )
    for k in sorted(rng.sample(range(4), 2)):
        s = sessions[k]
        add(
            "entity",
            f"{s['robot']}处理{s['object']}的结果怎么样？"
            if zh
            else f"How did {s['robot']} do with the {s['object']}?",
            [
                t["ids"]["outcome"]
                for t in sessions
                if t["robot"] == s["robot"] and t["object"] == s["object"]
            ],
        )
    pairs = sorted({(t["place"], t["robot"]) for t in sessions})
    pairs = [pair for pair in pairs if sum(1 for t in sessions if (t["place"], t["robot"]) == pair) <= 3]
    place, robot = pairs[rng.randrange(len(pairs))]
    add(
        "entity",
        f"{robot}在{place}的几次运行结果" if zh else f"Outcomes of {robot} runs at the {place}",
        [t["ids"]["outcome"] for t in sessions if t["place"] == place and t["robot"] == robot],
    )
    # contradiction: the lesson of session i (0..3) is corrected in session i + 4
    for s in sessions[4:]:
        add(
            "contradiction",
            f"现在{s['object']}应该用多大的{p1.words[1]}？"
            if zh
            else f"What {p1.words[0]} should be used for the {s['object']} now?",
            [s["ids"]["lesson"]],
        )
    # parameter: six attempts chosen at random
    attempts = [(s, kind) for s in sessions for kind in ("attempt1", "attempt2")]
    for s, kind in sorted(rng.sample(attempts, 6), key=lambda a: (a[0]["ids"]["setup"], a[1])):
        values = s["first"] if kind == "attempt1" else s["second"]
        add("parameter", _params_text(values), [s["ids"][kind]])
    return out


def check(documents: list[Step], queries: list[dict[str, Any]], log_of: dict[str, str]) -> list[str]:
    """Return the problems of the set: gold sets re-derived from the contexts must match the written ones."""
    problems: list[str] = []
    by_id = {d.id: d for d in documents}
    for q in queries:
        gold = q["gold"]
        if not 1 <= len(gold) <= 3:
            problems.append(f"{q['id']}: {len(gold)} gold documents")
        for g in gold:
            if g not in by_id or log_of[g] != q["collection"]:
                problems.append(f"{q['id']}: gold {g} is not in the query's log")
        docs = [d for d in documents if log_of[d.id] == q["collection"]]
        kind = q["tags"][0]
        if kind == "parameter":
            wanted = q["query"]
            found = [
                d.id
                for d in docs
                if d.kind.startswith("attempt")
                and d.text.endswith(wanted + ".")
                or d.kind.startswith("attempt")
                and d.text.endswith(wanted + "。")
            ]
            if found != gold:
                problems.append(f"{q['id']}: parameters match {found}, gold {gold}")
        if kind == "contradiction":
            (lesson,) = gold
            if by_id[lesson].context["step"] != 6 or by_id[lesson].index < 4:
                problems.append(f"{q['id']}: gold is not a correction")
        if kind == "neighbour":
            (change,) = gold
            problem = next(d for d in docs if d.session == by_id[change].session and d.kind == "problem")
            if problem.context["step"] + 1 != by_id[change].context["step"]:
                problems.append(f"{q['id']}: gold does not follow the described step")
        if kind == "entity":
            for g in gold:
                if by_id[g].kind != "outcome":
                    problems.append(f"{q['id']}: gold {g} is not an outcome")
    texts = [(log_of[d.id], d.text) for d in documents]
    if len(set(texts)) != len(texts):
        problems.append("repeated document text within a log")
    qtexts = [(q["collection"], q["query"]) for q in queries]
    if len(set(qtexts)) != len(qtexts):
        problems.append("repeated query text within a log")
    return problems


def main() -> int:
    rng = random.Random(SEED)
    documents: list[Step] = []
    queries: list[dict[str, Any]] = []
    log_of: dict[str, str] = {}
    for number, domain in enumerate(DOMAINS):
        steps, asked = build_log(domain, rng, date(2026, 1, 5) + timedelta(days=9 * number))
        documents += steps
        log_of.update((s.id, domain.slug) for s in steps)
        split = "heldout" if domain.slug in HELDOUT else "tune"
        for k, q in enumerate(asked):
            queries.append(
                {
                    "id": f"{domain.slug}-q{k:02d}",
                    "query": q["query"],
                    "gold": q["gold"],
                    "collection": domain.slug,
                    "lang": domain.lang,
                    "tags": [q["type"]],
                    "split": split,
                }
            )
    problems = check(documents, queries, log_of)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    rows: list[dict[str, Any]] = [
        {
            "kind": "document",
            "id": d.id,
            "text": d.text,
            "context": d.context,
            "collection": log_of[d.id],
            "session": d.session,
            "lang": next(x.lang for x in DOMAINS if x.slug == log_of[d.id]),
        }
        for d in documents
    ]
    rows += [{"kind": "query", **q} for q in queries]
    OUTPUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(documents)} documents and {len(queries)} queries to {OUTPUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
