"""Build benchmarks/data/robot_eval.jsonl, the robot-experience retrieval evaluation set.

Run from the repository root:  python benchmarks/data/make_robot_eval.py

The output is deterministic (fixed seed). Hand-written memories (``ANCHORS``) carry the answers to most
queries; templated episode logs, grasp trials, corridor runs and gait tests (``build_templated``) add many
near-miss documents that share words with the queries. Queries on templated documents derive their gold sets
from the generated contexts, and the build checks that every gold set holds 1 to 3 documents, that each
filter query's gold is exactly the relevant part of what its filter admits, and that queries tagged
``paraphrase`` share no content word with their gold documents.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent / "robot_eval.jsonl"
SEED = 20260512

Params = dict[str, tuple[float, str]]

DOCK = [12.0, 3.5, 0.0]
DOORWAY_3B = [4.2, 7.9, 0.0]
LOBBY = [0.5, 1.0, 0.0]
NAV_PLACES = [DOCK, DOORWAY_3B, LOBBY]


@dataclass
class Doc:
    slug: str
    text: str
    collection: str
    context: dict[str, Any]
    type: str = "fact"
    perception_type: str | None = None


@dataclass
class Query:
    text: str
    gold: list[str] | Callable[[Doc], bool]
    tags: list[str]
    context_filter: dict[str, Any] | None = None
    spatial_sort: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


ROBOTS = {
    "ur5e": ("ur5e-01", "UR5e"),
    "franka": ("franka-02", "Franka Panda"),
    "fetch": ("fetch-001", "Fetch"),
    "tb3": ("tb3-04", "TurtleBot3"),
    "amr": ("amr-07", "warehouse AMR"),
    "go1": ("go1-01", "Unitree Go1"),
}


def context(
    robot: str | None = None,
    params: Params | None = None,
    spatial: dict[str, list[float]] | None = None,
    task: tuple[str, bool | None, int | None] | None = None,
    env: str | None = None,
) -> dict[str, Any]:
    """Build a context in the four-section convention of SPEC section 2."""
    result: dict[str, Any] = {}
    if params:
        result["params"] = {name: {"value": value, "unit": unit} for name, (value, unit) in params.items()}
    if spatial:
        result["spatial"] = spatial
    if robot:
        robot_id, robot_type = ROBOTS[robot]
        result["robot"] = {"id": robot_id, "type": robot_type}
    if task:
        name, success, steps = task
        task_section: dict[str, Any] = {"name": name}
        if success is not None:
            task_section["success"] = success
        if steps is not None:
            task_section["steps"] = steps
        result["task"] = task_section
    if env:
        result["env"] = {"sim_or_real": env}
    return result


ANCHORS: list[Doc] = []
QUERIES: list[Query] = []


def doc(
    slug: str, text: str, collection: str, kind: str = "fact", perception: str | None = None, **ctx: Any
) -> None:
    """Add a hand-written memory; ``slug`` is how queries name it (ids are assigned at the end)."""
    ANCHORS.append(Doc(slug, text, collection, context(**ctx), kind, perception))


def ask(
    text: str,
    gold: list[str] | Callable[[Doc], bool],
    *tags: str,
    cf: dict[str, Any] | None = None,
    ss: dict[str, Any] | None = None,
) -> None:
    """Add a query; ``gold`` is a list of slugs or a predicate over the documents its filters admit."""
    QUERIES.append(Query(text, gold, list(tags), cf, ss))


# --------------------------------------------------------------------------------------------------------
# Manipulation
# --------------------------------------------------------------------------------------------------------
M = "manipulation"
doc(
    "m_papercup",
    "Paper cup grasp on the UR5e: grip_force=4.5 N with the gripper opened to 75 mm lifted the "
    "empty cup without denting it; 19 of 20 lifts succeeded.",
    M,
    robot="ur5e",
    params={"grip_force": (4.5, "N"), "gripper_width": (75, "mm")},
    task=("grasp_paper_cup", True, None),
    env="real",
)
doc(
    "m_plasticcup",
    "Plastic cup grasp: grip_force=9 N at 70 mm width; the thin rim flexed but the cup never slipped.",
    M,
    robot="ur5e",
    params={"grip_force": (9, "N"), "gripper_width": (70, "mm")},
    task=("grasp_plastic_cup", True, None),
    env="real",
)
doc(
    "m_mug",
    "Ceramic mug picked by the handle: grip_force=22 N, approach speed 0.08 m/s, 20/20 successful "
    "lifts on the Franka.",
    M,
    robot="franka",
    params={"grip_force": (22, "N"), "approach_speed": (0.08, "m/s")},
    task=("grasp_mug", True, None),
    env="real",
)
doc(
    "m_mug_fail",
    "Ceramic mug grasp failed three times when approaching the rim at 0.25 m/s: the fingers hit "
    "the lip before closing.",
    M,
    robot="franka",
    params={"approach_speed": (0.25, "m/s")},
    task=("grasp_mug", False, None),
    env="real",
)
doc(
    "m_flute",
    "Stemware pick: keep grip_force under 6 N; at 8 N the flute stem cracked during trial 14.",
    M,
    robot="franka",
    params={"grip_force": (8, "N")},
    task=("pick_stemware", False, None),
    env="real",
)
doc(
    "m_bottle_full",
    "Full 1.5 L water bottle: grip_force=30 N was needed; at 18 N it slid down the fingers during the lift.",
    M,
    robot="ur5e",
    params={"grip_force": (30, "N")},
    task=("grasp_bottle", True, None),
)
doc(
    "m_bottle_empty",
    "Empty PET bottle: 7 N is enough; above 12 N the bottle buckles and the grasp pose shifts.",
    M,
    robot="ur5e",
    params={"grip_force": (7, "N")},
    task=("grasp_bottle", True, None),
)
doc(
    "m_box_side",
    "Cardboard box 30x20x15 cm: pinching the top flaps is unreliable; grasping the side walls "
    "with 25 mm of finger depth worked 17 of 20 times.",
    M,
    robot="ur5e",
    params={"finger_depth": (25, "mm")},
    task=("grasp_box", True, None),
)
doc(
    "m_egg",
    "Raw egg transfer succeeded with the soft silicone fingertips at 1.8 N and a closing speed of 5 mm/s.",
    M,
    robot="franka",
    params={"grip_force": (1.8, "N"), "closing_speed": (5, "mm/s")},
    task=("transfer_egg", True, None),
    env="real",
)
doc(
    "m_tomato",
    "Cherry tomato picking: 2.5 N grip force with a vacuum assist; without the vacuum the tomato "
    "rolled out of the fingers 6 times in 20.",
    M,
    robot="franka",
    params={"grip_force": (2.5, "N")},
    task=("pick_tomato", True, None),
    env="real",
)
doc(
    "m_towel",
    "Folding a towel: pinching one tip with the jaws 8 mm apart failed repeatedly because the cloth "
    "slid under the pads; a scoop grasp fixed it.",
    M,
    robot="franka",
    params={"gripper_width": (8, "mm")},
    task=("fold_towel", False, None),
)
doc(
    "m_screwdriver",
    "Screwdriver pickup from the tool rack: align the fingers with the handle axis, gripper "
    "width 32 mm, grip_force 15 N; a diagonal approach knocked the rack over once.",
    M,
    robot="ur5e",
    params={"grip_force": (15, "N"), "gripper_width": (32, "mm")},
    task=("pick_screwdriver", True, None),
    spatial={"object_position": [0.62, -0.18, 0.05]},
)
doc(
    "m_kettle",
    "Kettle lift: grip_force 35 N on the handle; wrist torque reached 80 percent of its limit with "
    "1 L of water inside.",
    M,
    robot="ur5e",
    params={"grip_force": (35, "N")},
    task=("lift_kettle", True, None),
    spatial={"object_position": [0.45, 0.30, 0.92]},
)
doc(
    "m_sponge",
    "Kitchen sponge compresses at any force above 3 N, so measure the gripper width after contact "
    "rather than before.",
    M,
    robot="franka",
)
doc(
    "m_cable",
    "Cable insertion: the USB-C plug mated on the first try when the approach speed was lowered to "
    "0.01 m/s and wrist compliance was on.",
    M,
    robot="franka",
    params={"approach_speed": (0.01, "m/s")},
    task=("insert_usb_c", True, None),
    env="real",
)
doc(
    "m_peg",
    "Peg-in-hole with 0.5 mm clearance: a spiral search with 2 mm radius found the hole in 4.1 s on "
    "average; straight insertion jammed 9 of 20 times.",
    M,
    robot="franka",
    params={"spiral_radius": (2, "mm"), "clearance": (0.5, "mm")},
    task=("peg_in_hole", True, None),
)
doc(
    "m_drawer",
    "Opening the top drawer needs 14 N of pull; the handle is 2 cm deep, so the fingers must hook "
    "rather than pinch.",
    M,
    robot="fetch",
    params={"pull_force": (14, "N")},
    task=("open_drawer", True, None),
)
doc(
    "m_lever",
    "Lever door handle: rotate it 45 degrees down before pulling; pulling first tore the gripper pads.",
    M,
    robot="fetch",
    task=("open_door", False, None),
    env="real",
)

doc(
    "z_strawberry",
    "草莓采摘：夹持力 1.5 N，配合软硅胶指尖，20 次中 18 次果实完好。",
    M,
    robot="franka",
    params={"grip_force": (1.5, "N")},
    task=("pick_strawberry", True, None),
    env="real",
)
doc(
    "z_glass_cup",
    "玻璃杯抓取：夹持力 10 N、夹爪开口 80 mm 时成功率最高，超过 15 N 杯壁有裂纹风险。",
    M,
    robot="ur5e",
    params={"grip_force": (10, "N"), "gripper_width": (80, "mm")},
    task=("grasp_glass_cup", True, None),
)
doc(
    "z_bowl",
    "陶瓷碗从碗沿抓取容易打滑，改为从碗底托举后连续 15 次成功。",
    M,
    robot="ur5e",
    task=("grasp_bowl", True, None),
)
doc(
    "z_chopsticks",
    "筷子拾取：两根筷子并排时夹爪宽度 12 mm 最稳定，单根筷子常被压翻。",
    M,
    robot="franka",
    params={"gripper_width": (12, "mm")},
    task=("pick_chopsticks", True, None),
)
doc(
    "z_tofu",
    "嫩豆腐无法用二指夹爪抓取，任何超过 1 N 的力都会压碎，需要改用铲式末端执行器。",
    M,
    robot="franka",
)
doc(
    "z_box_heavy",
    "搬运装满书的纸箱（约 8 kg）时，夹持力需要 60 N，并把加速度限制在 0.5 m/s²。",
    M,
    robot="ur5e",
    params={"grip_force": (60, "N"), "payload": (8, "kg")},
    task=("carry_box", True, None),
)
doc(
    "z_can",
    "易拉罐抓取：夹持力 12 N 即可，过大会把罐身捏扁；接近速度 0.1 m/s。",
    M,
    robot="ur5e",
    params={"grip_force": (12, "N"), "approach_speed": (0.1, "m/s")},
    task=("grasp_can", True, None),
)
doc(
    "z_bottle_cap",
    "拧瓶盖任务：手腕每次旋转 90 度后重新抓取，扭矩设为 1.2 N·m 时不会滑丝。",
    M,
    robot="franka",
    params={"torque": (1.2, "N·m")},
    task=("unscrew_cap", True, None),
)
doc(
    "z_mug_fail",
    "马克杯抓取失败：相机把杯柄位置估计偏了 2 厘米，手指撞到了杯身。",
    M,
    robot="franka",
    task=("grasp_mug", False, None),
    env="real",
)
doc(
    "z_fruit_bag",
    "装水果的塑料袋很难抓：袋口太软，夹爪闭合后只夹住了一层薄膜。",
    M,
    robot="ur5e",
    task=("grasp_bag", False, None),
)

ask("grip force for the paper cup", ["m_papercup"], "exact")
ask("approach speed that worked for the ceramic mug handle grasp", ["m_mug"], "exact")
ask(
    "How hard may the fingers squeeze a champagne glass?", ["m_flute", "s_glass", "z_glass_cup"], "paraphrase"
)
ask("Best way to pick up something fragile laid by a hen", ["m_egg"], "paraphrase")
ask("Why could the hand not keep hold of the bath linen corner?", ["m_towel"], "paraphrase")
ask("technique for plugging a charger connector into a phone port", ["m_cable"], "paraphrase")
ask("spiral search radius for peg-in-hole", ["m_peg"], "exact")
ask("how much pull force does the top drawer need", ["m_drawer"], "exact")
ask("why did the gripper pads tear on the lever door handle", ["m_lever"], "failure")
ask("full water bottle slipping during the lift", ["m_bottle_full"], "exact")
ask("which side of the cardboard box to grasp", ["m_box_side"], "exact")
ask(
    "gentle grasps of food",
    ["m_egg", "m_tomato", "z_strawberry"],
    "numeric_filter",
    cf={"params.grip_force.value": {"$lt": 3}},
)
ask("failed mug grasps", ["m_mug_fail", "z_mug_fail"], "outcome_filter", cf={"task.success": False})
ask("玻璃杯的夹持力设多少", ["z_glass_cup"], "exact")
ask("草莓采摘用多大的力", ["z_strawberry"], "exact")
ask("怎样拿起很软、一碰就碎的豆制品", ["z_tofu"], "paraphrase")
ask("拧瓶盖的扭矩设置", ["z_bottle_cap"], "exact")
ask("搬运重纸箱时的加速度限制", ["z_box_heavy"], "exact")
ask("筷子并排时夹爪宽度", ["z_chopsticks"], "exact")
ask("马克杯抓取为什么撞到杯身", ["z_mug_fail"], "failure")
ask("How much grip force does a drink can need?", ["z_can"], "cross_lingual")
ask("How should a porcelain bowl be grasped so it does not slip?", ["z_bowl"], "cross_lingual")
ask("Why is a plastic produce bag hard to grasp?", ["z_fruit_bag"], "cross_lingual")
ask("抓取纸杯时夹持力多大合适", ["m_papercup"], "cross_lingual")
ask("取螺丝刀时夹爪开口多大", ["m_screwdriver"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Safety
# --------------------------------------------------------------------------------------------------------
S = "safety"
doc(
    "s_glass",
    "Safety limit: never exceed 20 N on glassware; the lab beakers chip at 24 N.",
    S,
    params={"max_grip_force": (20, "N")},
)
doc(
    "s_speed_humans",
    "When a person is within 1.5 m, cap the arm's tool speed at 0.25 m/s (collaborative mode).",
    S,
    robot="ur5e",
    params={"max_tool_speed": (0.25, "m/s")},
)
doc(
    "s_estop",
    "Emergency stop test: the arm halted within 120 ms and 3 cm of travel after the red button was pressed.",
    S,
    robot="ur5e",
    params={"stop_time": (120, "ms")},
    task=("estop_test", True, None),
    env="real",
)
doc(
    "s_battery",
    "Do not start a navigation mission below 20 percent battery; the base stalled in aisle 4 at "
    "7 percent last week.",
    S,
    robot="amr",
    params={"min_battery": (20, "%")},
)
doc(
    "s_payload",
    "Payload limit of the UR5e is 5 kg including the gripper (1.1 kg), so objects above 3.9 kg "
    "must be refused.",
    S,
    robot="ur5e",
    params={"max_payload": (5, "kg")},
)
doc(
    "s_knife",
    "Never pick kitchen knives by the blade; grasp only the handle with grip_force at least 12 N so "
    "the knife cannot rotate.",
    S,
    robot="franka",
    params={"grip_force": (12, "N")},
)
doc(
    "s_torque",
    "Joint 3 torque limit tripped at 150 N·m while lifting at full reach; keep heavy lifts within "
    "0.6 m of the base.",
    S,
    robot="ur5e",
    params={"joint3_torque": (150, "N·m")},
)
doc("z_s_stairs", "安全规则：四足机器人禁止在没有护栏的楼梯上自主下行，上次在 3 楼楼梯滑倒。", S, robot="go1")
doc(
    "z_s_agv_speed",
    "仓库里有人时，AGV 最高速度限制为 0.8 m/s。",
    S,
    robot="amr",
    params={"max_speed": (0.8, "m/s")},
)
doc(
    "z_s_hot", "禁止抓取温度超过 60°C 的物体，夹爪的硅胶垫会变形。", S, params={"max_object_temp": (60, "°C")}
)
doc("z_s_contact", "与人协作时，接触力不得超过 50 N。", S, params={"max_contact_force": (50, "N")})
doc(
    "z_s_workspace",
    "机械臂工作区边界：x 方向不得超过 0.85 米，否则会撞到相邻工位的显示器。",
    S,
    robot="ur5e",
    params={"workspace_x_max": (0.85, "m")},
)

ask("safety limit for force on glassware", ["s_glass"], "exact")
ask("How fast may the manipulator move when someone stands nearby?", ["s_speed_humans"], "paraphrase")
ask("emergency stop stopping distance and time", ["s_estop"], "exact")
ask("Minimum charge level before sending the robot out", ["s_battery"], "paraphrase")
ask("UR5e payload limit including gripper", ["s_payload"], "exact")
ask("how to hold a kitchen knife safely", ["s_knife"], "exact")
ask("joint 3 torque limit tripped", ["s_torque"], "exact")
ask("四足机器人下楼梯有什么规定", ["z_s_stairs"], "exact")
ask("有人在仓库时 AGV 速度上限", ["z_s_agv_speed"], "exact")
ask("人机协同作业允许的最大碰撞力度", ["z_s_contact"], "paraphrase")
ask("机械臂工作区 x 方向边界", ["z_s_workspace"], "exact")
ask("Is it safe to grab hot objects?", ["z_s_hot"], "cross_lingual")
ask("急停测试的制动距离是多少", ["s_estop"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Pushing (hand-written lessons; the episode logs are templated below)
# --------------------------------------------------------------------------------------------------------
P = "fetch-push"
doc(
    "p_friction",
    "Sim2real: the real table has about twice the friction of the MuJoCo default; pushes that "
    "travelled 0.20 m in sim stopped after 0.12 m on the real Fetch.",
    P,
    robot="fetch",
    env="real",
    task=("push_to_target", None, None),
)
doc(
    "p_speed",
    "Push speed 0.05 m/s gave the most accurate final block positions; at 0.15 m/s the block slid "
    "past the target by 4 cm on average.",
    P,
    robot="fetch",
    params={"push_speed": (0.05, "m/s")},
    env="sim",
)
doc(
    "p_contact",
    "Pushing from the block's corner makes it spin; aim the end effector at the center of the "
    "face, 1 cm below the top.",
    P,
    robot="fetch",
    env="sim",
)
doc(
    "p_reward",
    "Reward shaping: a -0.1 penalty per step cut mean episode length from 44 to 31 steps in "
    "FetchPush training.",
    P,
    robot="fetch",
    env="sim",
)
doc(
    "p_her",
    "With hindsight experience replay the push policy reached 90 percent success after 30 epochs; "
    "without HER it stayed under 10 percent.",
    P,
    robot="fetch",
    env="sim",
)
doc(
    "p_cylinder",
    "Cylinders roll away under pushing; cage them between both fingers and push slowly.",
    P,
    robot="fetch",
    env="sim",
)
doc(
    "z_p_sim2real",
    "仿真到真机：真实桌面摩擦系数约 0.6，仿真中设置为 0.3，导致真机推动距离偏短。",
    P,
    robot="fetch",
    env="real",
)
doc(
    "z_p_lr",
    "推方块策略训练：学习率 1e-3 时训练不稳定，降到 3e-4 后第 50 轮成功率达到 85%。",
    P,
    robot="fetch",
    params={"learning_rate": (0.0003, "")},
    env="sim",
)
doc(
    "z_p_height",
    "推动时末端离桌面高度设为 2 厘米最合适，太低会刮到桌面，太高会从方块上滑过。",
    P,
    robot="fetch",
    params={"ee_height": (0.02, "m")},
    env="sim",
)

ask("Why did the cube keep rotating instead of sliding straight?", ["p_contact"], "paraphrase")
ask("reward shaping step penalty in FetchPush", ["p_reward"], "exact")
ask("hindsight experience replay success rate", ["p_her"], "exact")
ask("Why do real pushes travel shorter than in simulation?", ["p_friction", "z_p_sim2real"], "sim2real")
ask("How to move round things across the table without them escaping?", ["p_cylinder"], "paraphrase")
ask("which push speed gave the most accurate final position", ["p_speed"], "exact")
ask("推方块训练的学习率", ["z_p_lr"], "exact")
ask("推动时末端离桌面多高", ["z_p_height"], "exact")
ask(
    "what raised push success on the real robot",
    ["r_domain_rand"],
    "outcome_filter",
    cf={"env.sim_or_real": "real", "robot.id": "fetch-001"},
)

# --------------------------------------------------------------------------------------------------------
# Navigation
# --------------------------------------------------------------------------------------------------------
N = "navigation"
doc(
    "n_doorway",
    "Doorway 3B is 78 cm wide; the base (56 cm) passes only when centered within 5 cm, so slow "
    "to 0.2 m/s before the frame.",
    N,
    robot="tb3",
    params={"doorway_width": (0.78, "m")},
    spatial={"position": DOORWAY_3B},
)
doc(
    "n_glass_wall",
    "The lidar does not see the glass wall in the lobby; mark it as a keep-out zone on the map.",
    N,
    robot="amr",
    spatial={"position": LOBBY},
)
doc(
    "n_carpet",
    "On the thick carpet in room 210 the odometry drifts 8 percent; trust the lidar scan matcher there.",
    N,
    robot="tb3",
    params={"odometry_drift": (8, "%")},
)
doc(
    "n_elevator",
    "Elevator entry: wait until the door has been open 2 s, then drive in at 0.3 m/s; the doors "
    "close after 10 s.",
    N,
    robot="amr",
    params={"entry_speed": (0.3, "m/s")},
)
doc(
    "n_corridor_people",
    "Corridor B at lunch time: people cross every few seconds; inflation radius 0.45 m "
    "kept 0.6 m clearance and no emergency stops.",
    N,
    robot="tb3",
    params={"inflation_radius": (0.45, "m")},
    task=("corridor_navigation", True, None),
)
doc(
    "n_inflation",
    "Costmap inflation radius 0.25 m made the planner cut corners and brush the shelves in "
    "aisle 6; 0.4 m fixed it.",
    N,
    robot="amr",
    params={"inflation_radius": (0.4, "m")},
)
doc(
    "n_dock",
    "Docking to the charger fails when the approach angle error is over 10 degrees; re-align at "
    "0.5 m from the dock.",
    N,
    robot="amr",
    params={"max_angle_error": (10, "deg")},
)
doc(
    "n_ramp",
    "The loading-dock ramp is 8 degrees; the TurtleBot wheels slip going up unless speed stays "
    "below 0.15 m/s.",
    N,
    robot="tb3",
    params={"max_speed": (0.15, "m/s")},
    env="real",
)
doc(
    "n_localization",
    "AMCL lost localization in the empty warehouse hall: no features within the 12 m lidar "
    "range; reflective markers on the pillars fixed it.",
    N,
    robot="amr",
)
doc(
    "n_fire_ext",
    "Minimum obstacle distance during corridor runs was 0.18 m, at the fire extinguisher next to door 3C.",
    N,
    robot="tb3",
    params={"min_obstacle_distance": (0.18, "m")},
)
doc(
    "z_n_stairs",
    "深度相机检测下行楼梯边缘的距离约 1.2 米，激光雷达看不到台阶。",
    N,
    robot="tb3",
    params={"detect_distance": (1.2, "m")},
)
doc(
    "z_n_narrow",
    "窄通道（宽 70 厘米）通过时把最大线速度降到 0.15 m/s，10 次全部通过。",
    N,
    robot="tb3",
    params={"max_speed": (0.15, "m/s")},
    task=("narrow_passage", True, None),
)
doc("z_n_wifi", "地下车库没有 WiFi，机器人无法上传地图，需要本地保存后回到一楼再同步。", N, robot="amr")
doc("z_n_mirror", "大厅的镜面墙会让激光雷达产生虚假障碍物，导致路径规划绕远。", N, robot="amr")
doc(
    "z_n_wet",
    "拖地后的湿地面让轮式底盘打滑，里程计误差达到 15%。",
    N,
    robot="tb3",
    params={"odometry_error": (15, "%")},
)
doc("z_n_recover", "定位丢失后原地旋转一圈重新匹配，平均 6 秒恢复。", N, robot="amr")
doc(
    "z_n_threshold",
    "机器人卡在门槛上：门槛高 3 厘米，超过底盘 2 厘米的越障能力。",
    N,
    robot="tb3",
    task=("cross_threshold", False, None),
)
doc(
    "z_n_goal",
    "路径规划失败：目标点落在障碍物膨胀区内，规划器直接放弃。",
    N,
    robot="amr",
    task=("plan_path", False, None),
)

ask("doorway 3B width", ["n_doorway"], "exact")
ask(
    "Why does the laser scanner miss transparent partitions at the entrance hall?",
    ["n_glass_wall"],
    "paraphrase",
)
ask("odometry drift on thick carpet", ["n_carpet"], "exact")
ask("How to ride the lift between floors", ["n_elevator"], "paraphrase")
ask("inflation radius that stopped the robot brushing shelves", ["n_inflation"], "exact")
ask("why does charger docking fail", ["n_dock"], "exact")
ask("wheel slip on the loading-dock ramp", ["n_ramp"], "exact")
ask("closest obstacle distance near the fire extinguisher", ["n_fire_ext"], "exact")
ask("窄通道的最大线速度", ["z_n_narrow"], "exact")
ask("镜子墙对激光雷达的影响", ["z_n_mirror"], "exact")
ask("地板刚清洁完轮子为什么空转", ["z_n_wet"], "paraphrase")
ask("地下车库没网怎么同步地图", ["z_n_wifi"], "exact")
ask("机器人为什么卡在门槛上", ["z_n_threshold"], "failure")
ask("How far away can the depth camera detect a downward staircase?", ["z_n_stairs"], "cross_lingual")
ask(
    "route planning fails when the goal lies inside the inflated obstacle zone", ["z_n_goal"], "cross_lingual"
)
ask("How long does relocalization by spinning in place take?", ["z_n_recover"], "cross_lingual")
ask("电梯门开多久后可以进入", ["n_elevator"], "cross_lingual")
ask("充电桩对接失败的原因", ["n_dock"], "cross_lingual")
ask("空旷仓库里激光特征太少，加了什么标记", ["n_localization"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Locomotion
# --------------------------------------------------------------------------------------------------------
L = "locomotion"
doc(
    "l_gravel",
    "Trot gait on gravel: step height 0.08 m at 0.6 m/s; lower steps caught stones and the robot "
    "stumbled twice.",
    L,
    robot="go1",
    params={"step_height": (0.08, "m")},
    env="real",
)
doc(
    "l_ice",
    "On the icy parking lot the quadruped slipped at 0.5 m/s; a crawl gait at 0.2 m/s with a wide "
    "stance crossed 30 m without a fall.",
    L,
    robot="go1",
    env="real",
)
doc(
    "l_stairs",
    "Stair climbing: 17 cm risers were climbed reliably with 12 degrees of pitch compensation; 20 cm "
    "risers failed 3 of 5.",
    L,
    robot="go1",
    params={"pitch_compensation": (12, "deg")},
    env="real",
)
doc(
    "l_battery",
    "Battery drains 30 percent faster when trotting uphill on grass compared with flat concrete.",
    L,
    robot="go1",
    env="real",
)
doc(
    "l_recovery",
    "The fall recovery routine takes 4.5 s; it fails when the robot lands on its side against a wall.",
    L,
    robot="go1",
    params={"recovery_time": (4.5, "s")},
)
doc(
    "l_payload",
    "Carrying a 5 kg payload lowers the top trot speed from 1.5 to 1.1 m/s before the legs saturate.",
    L,
    robot="go1",
    params={"payload": (5, "kg")},
)
doc(
    "l_motor_temp",
    "Knee motor reached 78°C after 20 min of continuous bounding; the thermal limit is 85°C, so "
    "rest 5 min every 15 min.",
    L,
    robot="go1",
    params={"knee_motor_temp": (78, "°C")},
)
doc(
    "z_l_grass",
    "草地上小跑步态速度 0.8 m/s 最稳定，步高 0.06 m。",
    L,
    robot="go1",
    params={"step_height": (0.06, "m")},
    env="real",
)
doc(
    "z_l_slope",
    "坡度 15 度的斜坡上坡时需要把身体前倾 8 度，否则后腿打滑。",
    L,
    robot="go1",
    params={"body_pitch": (8, "deg")},
    env="real",
)
doc("z_l_sand", "沙地行走时足端下陷约 3 厘米，改用慢速爬行步态后顺利通过。", L, robot="go1", env="real")
doc(
    "z_l_rl",
    "四足强化学习策略在仿真中训练 2 亿步，部署到真机前加入了 ±20% 的质量随机化。",
    L,
    robot="go1",
    env="sim",
)
doc(
    "z_l_jump",
    "跳跃动作落地冲击超过 400 N 时，膝关节电机会触发过流保护。",
    L,
    robot="go1",
    params={"landing_force": (400, "N")},
)

ask("step height for trotting on gravel", ["l_gravel"], "exact")
ask("How did the four-legged machine get over frozen asphalt?", ["l_ice"], "paraphrase")
ask("stair riser height the quadruped can climb", ["l_stairs"], "exact")
ask("energy consumption on inclines", ["l_battery"], "paraphrase")
ask("knee motor temperature limit during bounding", ["l_motor_temp"], "exact")
ask("top trot speed with a 5 kg payload", ["l_payload"], "exact")
ask("草地小跑速度和步高", ["z_l_grass"], "exact")
ask("上坡时身体前倾角度", ["z_l_slope"], "exact")
ask("在松软的海滩上怎么走", ["z_l_sand"], "paraphrase")
ask("跳跃落地冲击多大会触发过流保护", ["z_l_jump"], "exact")
ask("mass randomization used before deploying the quadruped RL policy", ["z_l_rl"], "cross_lingual")
ask("摔倒后自动起身需要多长时间", ["l_recovery"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Perception (some stored as perceptions)
# --------------------------------------------------------------------------------------------------------
V = "perception"
doc(
    "v_exposure",
    "Camera exposure 8 ms under the warehouse LED lights gave blur-free images at 1 m/s; 20 ms "
    "blurred the barcodes.",
    V,
    "perception",
    "visual",
    robot="amr",
    params={"exposure": (8, "ms")},
)
doc(
    "v_depth_noise",
    "RealSense D435 depth noise on the black tray: 12 mm standard deviation at 0.8 m; matte "
    "tape on the tray cut it to 4 mm.",
    V,
    "perception",
    "visual",
    robot="ur5e",
    params={"depth_std": (12, "mm")},
)
doc(
    "v_flicker",
    "The 50 Hz fluorescent lights in lab C cause banding; set the exposure to a multiple of 10 ms.",
    V,
    robot="ur5e",
)
doc(
    "v_transparent",
    "Depth camera returns holes on transparent bottles; use the RGB segmentation mask and a "
    "fixed bottle height prior.",
    V,
    robot="ur5e",
)
doc(
    "v_sunlight",
    "Direct sunlight through the west windows after 4 pm saturates the stereo depth; schedule "
    "pick tasks before then.",
    V,
    robot="ur5e",
)
doc(
    "v_tactile",
    "Tactile array on the left finger showed shear rising 0.3 s before the bottle slipped; a slip "
    "detector can trigger on it.",
    V,
    "perception",
    "tactile",
    robot="franka",
)
doc(
    "v_audio",
    "Gearbox of joint 2 makes a clicking sound at 2 Hz when loaded above 3 kg; logged for maintenance.",
    V,
    "perception",
    "auditory",
    robot="ur5e",
)
doc(
    "v_proprio",
    "Joint 5 position error spikes to 0.02 rad during fast wrist flips, caused by backlash.",
    V,
    "perception",
    "proprioceptive",
    robot="ur5e",
    params={"position_error": (0.02, "rad")},
)
doc(
    "z_v_exposure",
    "仓库夜间照明下相机曝光设为 15 毫秒、增益 8 dB，二维码识别率 98%。",
    V,
    "perception",
    "visual",
    robot="amr",
    params={"exposure": (15, "ms"), "gain": (8, "dB")},
)
doc("z_v_black", "深度相机看黑色物体时噪声很大，点云出现大片空洞。", V, robot="ur5e")
doc("z_v_lens", "镜头上有灰尘导致物体检测置信度下降 20%，需要每周擦拭一次。", V, robot="amr")
doc(
    "z_v_tactile",
    "触觉传感器在抓取海绵时读数饱和，需要降低增益。",
    V,
    "perception",
    "tactile",
    robot="franka",
)
doc(
    "z_v_thermal",
    "热成像相机检测到电机外壳 70°C，超过报警阈值 65°C。",
    V,
    "perception",
    "visual",
    robot="go1",
    params={"motor_housing_temp": (70, "°C")},
)

ask("exposure that avoided barcode blur at 1 m/s", ["v_exposure"], "exact")
ask(
    "why does range imaging stop working late in the day on the sunny side of the building",
    ["v_sunlight"],
    "paraphrase",
)
ask("depth camera noise on black objects", ["v_depth_noise", "z_v_black"], "exact")
ask("banding under fluorescent lights", ["v_flicker"], "exact")
ask("transparent bottles leave holes in the depth image", ["v_transparent"], "exact")
ask("slip detection from tactile shear", ["v_tactile"], "exact")
ask("what mechanical rattle did the arm make under heavy weight", ["v_audio"], "paraphrase")
ask(
    "tactile readings during grasping",
    ["v_tactile", "z_v_tactile"],
    "outcome_filter",
    cf={"type": "perception", "perception_type": "tactile"},
)
ask("wrist joint position error from backlash", ["v_proprio"], "exact")
ask("夜间仓库相机增益设置", ["z_v_exposure"], "exact")
ask("镜头脏了有什么影响", ["z_v_lens"], "exact")
ask("电机外壳温度报警阈值", ["z_v_thermal"], "exact")
ask("触觉传感器读数饱和怎么办", ["z_v_tactile"], "exact")
ask("thermal camera saw the motor housing too hot", ["z_v_thermal"], "cross_lingual")
ask("荧光灯导致图像出现条纹怎么办", ["v_flicker"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------------------
C = "calibration"
doc(
    "c_handeye",
    "Hand-eye calibration with 15 ChArUco poses gave 1.8 mm reprojection error; with 8 poses it was 4.5 mm.",
    C,
    robot="ur5e",
    params={"reprojection_error": (1.8, "mm")},
)
doc(
    "c_tcp",
    "TCP offset for the new gripper is 0.162 m along tool Z; the old value 0.145 m made grasps 17 mm "
    "too deep.",
    C,
    robot="ur5e",
    params={"tcp_offset_z": (0.162, "m")},
)
doc(
    "c_ft_zero",
    "Zero the wrist force-torque sensor after every tool change; a 2 N offset made the contact "
    "detection trigger early.",
    C,
    robot="franka",
)
doc(
    "c_lidar_extr",
    "Lidar-to-base extrinsic was off by 1.5 degrees in yaw, which bent straight walls in the map.",
    C,
    robot="tb3",
    params={"yaw_error": (1.5, "deg")},
)
doc(
    "c_cam_intr",
    "Intrinsic calibration of the wrist camera drifts after the lens is bumped; re-run it if the "
    "reprojection error exceeds 0.5 px.",
    C,
    robot="ur5e",
)
doc(
    "c_warmup",
    "The arm's joint encoders need 15 minutes of warm-up; calibrating cold shifted the base pose by 0.7 mm.",
    C,
    robot="ur5e",
)
doc(
    "z_c_handeye",
    "手眼标定：使用 20 个姿态后平移误差 1.2 毫米，旋转误差 0.3 度。",
    C,
    robot="franka",
    params={"translation_error": (1.2, "mm")},
)
doc("z_c_imu", "IMU 零偏标定需要静止 30 秒，否则航向角漂移明显。", C, robot="go1")
doc(
    "z_c_wheel",
    "轮径标定：左轮实际直径 65.4 毫米，比名义值小 0.6 毫米，导致直线行驶时向右偏。",
    C,
    robot="tb3",
    params={"left_wheel_diameter": (65.4, "mm")},
)

ask("reprojection error with 15 ChArUco poses", ["c_handeye"], "exact")
ask("TCP offset of the new gripper", ["c_tcp"], "exact")
ask("why did touch sensing fire before the fingers reached the part", ["c_ft_zero"], "paraphrase")
ask("Why were the corridors curved on the floor plan the robot built?", ["c_lidar_extr"], "paraphrase")
ask("encoder warm-up before calibration", ["c_warmup"], "exact")
ask("IMU 零偏标定要静止多久", ["z_c_imu"], "exact")
ask("小车直线行驶向右偏的原因", ["z_c_wheel"], "exact")
ask("为什么直走会往一边歪", ["z_c_wheel"], "paraphrase")
ask("hand-eye calibration with 20 poses: translation error", ["z_c_handeye"], "cross_lingual")
ask("更换工具后力传感器需要清零吗", ["c_ft_zero"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Sim2real and failures
# --------------------------------------------------------------------------------------------------------
R = "sim2real"
doc(
    "r_latency",
    "The real Fetch has 40 ms of action latency that the simulator lacked; adding a 2-step delay "
    "in sim closed most of the gap.",
    R,
    robot="fetch",
    params={"action_latency": (40, "ms")},
    env="real",
)
doc(
    "r_domain_rand",
    "Domain randomization of block mass (0.5x to 2x) and friction (0.5 to 1.2) raised real "
    "push success from 45 to 78 percent.",
    R,
    robot="fetch",
    env="real",
)
doc(
    "r_detector",
    "The sim-trained detector missed 30 percent of real mugs until we added random lighting and textures.",
    R,
    robot="ur5e",
    env="real",
)
doc(
    "r_gripper",
    "Simulated gripper closes in 0.1 s, the real one needs 0.6 s; the policy released objects too "
    "early on the robot.",
    R,
    robot="franka",
    params={"close_time": (0.6, "s")},
    env="real",
)
doc(
    "z_r_gap",
    "仿真中抓取成功率 95%，真机只有 62%，主要原因是物体位姿估计误差。",
    R,
    robot="franka",
    env="real",
)
doc("z_r_noise", "训练时给动作加入 5% 的高斯噪声后，真机轨迹抖动明显减少。", R, robot="franka", env="real")
F = "failures"
doc(
    "f_vacuum",
    "Suction cup failed to hold the cardboard box: the porous surface leaked and vacuum stayed at "
    "-20 kPa instead of -60 kPa.",
    F,
    robot="ur5e",
    params={"vacuum": (-20, "kPa")},
    task=("suction_pick", False, None),
)
doc(
    "f_collision",
    "Collision with the shelf edge during place: the planner used an outdated octomap from 3 s earlier.",
    F,
    robot="fetch",
    task=("place_on_shelf", False, None),
)
doc(
    "f_ik",
    "Pick-and-place of the red block timed out because the IK solver returned no solution near the "
    "joint limit of wrist 3.",
    F,
    robot="ur5e",
    task=("pick_place", False, None),
)
doc(
    "f_wrong_cup",
    "Picked the blue cup instead of the green one: the color threshold failed under warm lights.",
    F,
    robot="ur5e",
    task=("pick_green_cup", False, None),
    env="real",
)
doc(
    "z_f_drop",
    "搬运途中饮料瓶掉落：瓶身有水珠，摩擦力不足。",
    F,
    robot="ur5e",
    task=("carry_bottle", False, None),
)
doc(
    "z_f_cable",
    "机械臂线缆在第 6 轴缠绕两圈后报警，需要限制手腕旋转范围在 ±270 度以内。",
    F,
    robot="ur5e",
    params={"wrist_range": (270, "deg")},
)

ask("action latency difference between sim and the real Fetch", ["r_latency"], "exact")
ask("Why did the learned controller let go of items prematurely on hardware?", ["r_gripper"], "paraphrase")
ask("domain randomization ranges for block mass and friction", ["r_domain_rand"], "exact")
ask("sim-trained detector missing real mugs", ["r_detector"], "exact")
ask("仿真和真机抓取成功率差距", ["z_r_gap"], "exact")
ask(
    "adding Gaussian noise to actions during training reduced jitter on the real arm",
    ["z_r_noise"],
    "cross_lingual",
)
ask("why did the suction cup fail on cardboard", ["f_vacuum"], "failure")
ask("What made the arm bump into the rack while setting something down?", ["f_collision"], "paraphrase")
ask("IK solver found no solution near the wrist joint limit", ["f_ik"], "failure")
ask("picked the wrong colored cup", ["f_wrong_cup"], "failure")
ask("饮料瓶为什么会掉", ["z_f_drop"], "failure")
ask("第 6 轴线缆缠绕报警", ["z_f_cable"], "exact")
ask("末端关节一直朝同一方向转圈会出什么问题", ["z_f_cable"], "paraphrase")
ask("为什么吸盘吸不住纸箱", ["f_vacuum"], "cross_lingual")
ask("放置物体时为什么撞到货架", ["f_collision"], "cross_lingual")

# --------------------------------------------------------------------------------------------------------
# Templated near-miss documents and the queries that target them
# --------------------------------------------------------------------------------------------------------
SPOT_EN = [1.32, 0.78, 0.42]
SPOT_ZH = [1.20, 0.62, 0.42]
GRASP_OBJECTS = [
    ("wooden block", "木块"),
    ("tennis ball", "网球"),
    ("toy car", "玩具车"),
    ("soap bar", "肥皂"),
    ("stapler", "订书机"),
    ("tape roll", "胶带卷"),
    ("rubber duck", "橡皮鸭"),
    ("cereal box", "麦片盒"),
]
TERRAINS = [
    ("concrete", "水泥地"),
    ("grass", "草地"),
    ("carpet", "地毯"),
    ("gravel", "碎石路"),
    ("rubber mat", "橡胶垫"),
]


def distance(a: list[float], b: list[float]) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))


def random_point(
    rng: random.Random,
    avoid: list[list[float]],
    low: tuple[float, float],
    high: tuple[float, float],
    z: float,
) -> list[float]:
    while True:
        point = [round(rng.uniform(low[0], high[0]), 3), round(rng.uniform(low[1], high[1]), 3), z]
        if all(distance(point, other) > 0.08 for other in avoid):
            return point


def push_episode(
    rng: random.Random,
    number: int,
    chinese: bool,
    final: list[float] | None = None,
    success: bool | None = None,
    steps: int | None = None,
    env: str = "sim",
) -> Doc:
    if final is None:
        final = random_point(rng, [SPOT_EN, SPOT_ZH], (1.1, 0.5), (1.5, 1.0), 0.42)
    if success is None:
        success = rng.random() < 0.6
    error_cm = round(rng.uniform(0.8, 4.5), 1) if success else round(rng.uniform(6.0, 15.0), 1)
    angle = rng.uniform(0.0, 2.0 * math.pi)
    target = [
        round(final[0] + error_cm / 100 * math.cos(angle), 3),
        round(final[1] + error_cm / 100 * math.sin(angle), 3),
        0.42,
    ]
    error_cm = round(distance(final, target) * 100, 1)
    steps = steps if steps is not None else (rng.randint(22, 45) if success else rng.randint(30, 48))
    pushed = round(rng.uniform(0.05, 0.30), 2)
    speed = rng.choice([0.04, 0.05, 0.06, 0.08, 0.1])
    if chinese:
        outcome = "成功" if success else "失败"
        text = rng.choice(
            [
                f"第 {number} 回合：方块推动 {pushed:.2f} 米，{outcome}，共 {steps} 步。",
                f"第 {number} 回合推方块{outcome}，最终误差 {error_cm} 厘米，用了 {steps} 步。",
            ]
        )
    else:
        outcome = "success" if success else "failed"
        text = rng.choice(
            [
                f"Episode {number}: pushed block {pushed:.2f} m, {outcome}, {steps} steps.",
                f"Episode {number}: block moved {pushed:.2f} m toward the target, final error {error_cm} cm, "
                f"{outcome} after {steps} steps.",
            ]
        )
    ctx = context(
        robot="fetch",
        params={"push_speed": (speed, "m/s")},
        spatial={"object_position": final, "target_position": target},
        task=("push_to_target", success, steps),
        env=env,
    )
    slug = f"{'z_' if chinese else ''}push_ep{number}"
    return Doc(slug, text, P, ctx)


def grasp_trial(rng: random.Random, number: int, chinese: bool, obj: int, force: float) -> Doc:
    width = rng.choice([30, 40, 45, 55, 60, 68])
    outcome = rng.choices(["ok", "slip", "drop"], weights=[6, 2, 1])[0]
    success = outcome == "ok"
    if chinese:
        result = {"ok": "成功", "slip": "抬起时打滑", "drop": "转运中掉落"}[outcome]
        text = f"抓取试验 {number}：{GRASP_OBJECTS[obj][1]}，夹持力 {force:g} N，开口 {width} mm，{result}。"
    else:
        result = {"ok": "success", "slip": "slipped during lift", "drop": "dropped during transfer"}[outcome]
        text = (
            f"Grasp trial {number} on the {GRASP_OBJECTS[obj][0]}: grip_force={force:g} N, gripper width "
            f"{width} mm, {result}."
        )
    ctx = context(
        robot=rng.choice(["ur5e", "franka"]),
        params={"grip_force": (force, "N"), "gripper_width": (width, "mm")},
        task=("grasp_" + GRASP_OBJECTS[obj][0].replace(" ", "_"), success, None),
    )
    ctx["object"] = GRASP_OBJECTS[obj][0]
    return Doc(f"{'z_' if chinese else ''}grasp_trial{number}", text, M, ctx)


def nav_run(
    rng: random.Random,
    number: int,
    chinese: bool,
    corridor: str,
    final: list[float] | None = None,
    success: bool = True,
) -> Doc:
    speed = round(rng.uniform(0.3, 0.7), 2)
    closest = round(rng.uniform(0.30, 0.90), 2)
    seconds = rng.randint(40, 160)
    if final is None:
        final = random_point(rng, [], (0.0, 0.0), (20.0, 10.0), 0.0)
        while any(distance(final, place) < 1.5 for place in NAV_PLACES):
            final = random_point(rng, [], (0.0, 0.0), (20.0, 10.0), 0.0)
    if chinese:
        result = "到达目标" if success else "未到达目标"
        text = (
            f"第 {number} 次导航：走廊 {corridor}，平均速度 {speed} m/s，最近障碍物 {closest} 米，{result}。"
        )
    else:
        result = (
            f"reached the goal in {seconds} s"
            if success
            else rng.choice(
                ["aborted after the path was blocked by a pallet", "gave up after 3 replanning attempts"]
            )
        )
        text = (
            f"Run {number} through corridor {corridor}: average speed {speed} m/s, closest obstacle "
            f"{closest} m, {result}."
        )
    ctx = context(
        robot=rng.choice(["tb3", "amr"]),
        params={"average_speed": (speed, "m/s"), "closest_obstacle": (closest, "m")},
        spatial={"position": final},
        task=("corridor_navigation", success, None),
    )
    ctx["corridor"] = corridor
    return Doc(f"{'z_' if chinese else ''}nav_run{number}", text, N, ctx)


def gait_test(rng: random.Random, number: int, chinese: bool, speed: float) -> Doc:
    terrain = rng.randrange(len(TERRAINS))
    success = rng.random() > 0.2
    if chinese:
        result = "稳定完成" if success else "中途摔倒"
        text = f"步态测试 {number}：在{TERRAINS[terrain][1]}上以 {speed:.1f} m/s 小跑，{result}。"
    else:
        result = "stable" if success else "fell after a few meters"
        text = f"Gait test {number}: trot at {speed:.1f} m/s on {TERRAINS[terrain][0]}, {result}."
    ctx = context(robot="go1", params={"speed": (speed, "m/s")}, task=("trot", success, None), env="real")
    return Doc(f"{'z_' if chinese else ''}gait_test{number}", text, L, ctx)


def build_templated(rng: random.Random) -> list[Doc]:
    docs: list[Doc] = []
    numbers = [n for n in rng.sample(range(1, 200), 110) if n not in (37, 112, 73, 137)]
    # Episode 37 and its numeric neighbours: the exact-lookup query must find 37, not 137 or 73.
    docs.append(push_episode(rng, 37, False, success=True, steps=33))
    docs.append(push_episode(rng, 137, False))
    docs.append(push_episode(rng, 73, False))
    docs.append(push_episode(rng, 112, True, success=False, steps=41))
    # two episodes that end near SPOT_EN, two near SPOT_ZH
    docs.append(push_episode(rng, numbers.pop(), False, final=[1.325, 0.772, 0.42], success=True, steps=29))
    docs.append(push_episode(rng, numbers.pop(), True, final=[1.310, 0.790, 0.42], success=True, steps=35))
    docs.append(push_episode(rng, numbers.pop(), True, final=[1.205, 0.611, 0.42], success=False, steps=44))
    docs.append(push_episode(rng, numbers.pop(), True, final=[1.192, 0.628, 0.42], success=True, steps=27))
    # timeouts at the 50-step limit and very quick successes
    docs.append(push_episode(rng, numbers.pop(), False, success=False, steps=50))
    docs.append(push_episode(rng, numbers.pop(), True, success=False, steps=50))
    docs.append(push_episode(rng, numbers.pop(), False, success=True, steps=16))
    docs.append(push_episode(rng, numbers.pop(), False, success=True, steps=18, env="real"))
    for _ in range(60):
        docs.append(push_episode(rng, numbers.pop(), False, env=rng.choice(["sim", "sim", "sim", "real"])))
    for _ in range(30):
        docs.append(push_episode(rng, numbers.pop(), True, env=rng.choice(["sim", "sim", "real"])))

    trial_numbers = iter(rng.sample(range(1, 400), 80))
    docs.append(grasp_trial(rng, next(trial_numbers), False, 1, 10))
    docs.append(grasp_trial(rng, next(trial_numbers), False, 1, 11))
    for index in range(34):
        docs.append(
            grasp_trial(
                rng,
                next(trial_numbers),
                False,
                index % len(GRASP_OBJECTS),
                rng.choice([14, 16, 18, 20, 24, 28, 32]),
            )
        )
    for index in range(22):
        docs.append(
            grasp_trial(
                rng,
                next(trial_numbers),
                True,
                (index + 3) % len(GRASP_OBJECTS),
                rng.choice([14, 16, 18, 20, 24, 28, 32]),
            )
        )

    run_numbers = iter(rng.sample(range(1, 300), 60))
    docs.append(nav_run(rng, next(run_numbers), False, "A", success=False))
    docs.append(nav_run(rng, next(run_numbers), False, "A", success=False))
    docs.append(nav_run(rng, next(run_numbers), False, "B", final=[12.2, 3.4, 0.0]))
    docs.append(nav_run(rng, next(run_numbers), True, "D", final=[11.8, 3.7, 0.0]))
    for _ in range(24):
        docs.append(nav_run(rng, next(run_numbers), False, rng.choice("ABCD")))
    for _ in range(14):
        docs.append(nav_run(rng, next(run_numbers), True, rng.choice("CD")))

    gait_numbers = iter(rng.sample(range(1, 200), 40))
    docs.append(gait_test(rng, next(gait_numbers), False, 1.3))
    docs.append(gait_test(rng, next(gait_numbers), True, 1.4))
    for _ in range(16):
        docs.append(gait_test(rng, next(gait_numbers), False, rng.choice([0.3, 0.5, 0.6, 0.8, 1.0, 1.1])))
    for _ in range(10):
        docs.append(gait_test(rng, next(gait_numbers), True, rng.choice([0.3, 0.5, 0.6, 0.8, 1.0, 1.1])))
    return docs


# --------------------------------------------------------------------------------------------------------
# Identifiers and parameter values: memories that differ in an id or a few numbers
# --------------------------------------------------------------------------------------------------------
# Robot logs name error codes, camera serials, firmware versions and battery packs, and record tuned
# gains; a question often names only that. Each family below holds one answer and three siblings whose
# id (or gains) is a permutation of the answer's, each with its own cause, fix or measurement, so only
# the id tells them apart. Families are generated with their own seed (``SEED + 1``): the rest of the set
# is unchanged. Gold sets follow from the construction: the one document carrying the id asked for.
ID_SIBLINGS = 3
ERROR_CAUSES = [
    ("lidar driver timeout", "restarting the lidar driver", "激光雷达驱动超时", "重启激光雷达驱动"),
    (
        "left wheel motor overcurrent",
        "letting the motor cool for 5 minutes",
        "左轮电机过流",
        "让电机冷却 5 分钟",
    ),
    ("localization lost", "re-initialising the pose at the charger", "定位丢失", "在充电桩处重新初始化位姿"),
    ("emergency stop pressed", "releasing the stop and re-arming", "急停按钮被按下", "松开急停并重新上电"),
    ("IMU drift above limit", "recalibrating the IMU at rest", "IMU 漂移超限", "静止时重新标定 IMU"),
    ("battery undervoltage", "swapping in a charged pack", "电池欠压", "换上充满电的电池"),
    ("costmap inflation failure", "clearing the costmap", "代价地图膨胀失败", "清空代价地图"),
    ("wifi link lost", "switching to the backup access point", "wifi 断线", "切到备用接入点"),
]
FIRMWARE_NOTES = [
    ("fixed the gripper width drift", "修复了夹爪开口漂移"),
    ("introduced a homing bug after power loss", "引入了断电后回零的错误"),
    ("raised the force limit to 140 N", "把力上限提高到 140 N"),
    ("slowed the finger closing speed by half", "把手指闭合速度减半"),
    ("added slip detection from the motor current", "增加了基于电机电流的打滑检测"),
    ("broke the tactile sensor readout", "导致触觉传感器读数失效"),
    ("cut the command latency to 4 ms", "把指令延迟降到 4 ms"),
    ("reset the calibration on every boot", "每次开机都会重置标定"),
]


def _permutations(rng: random.Random, digits: str, count: int) -> list[str]:
    """Return ``digits`` and ``count`` other orderings of its characters (all different)."""
    found = [digits]
    while len(found) < count + 1:
        shuffled = "".join(rng.sample(digits, len(digits)))
        if shuffled not in found and shuffled[0] != "0":
            found.append(shuffled)
    return found


def _digits(rng: random.Random, size: int, taken: set[str]) -> str:
    """Return ``size`` different digits, as a multiset not used by an earlier family (``taken``)."""
    while True:
        value = "".join(rng.choice("123456789") for _ in range(size))
        key = "".join(sorted(value))
        if len(set(value)) == size and key not in taken:
            taken.add(key)
            return value


def build_identifiers(rng: random.Random) -> tuple[list[Doc], list[Query]]:
    """Return the documents and queries of the identifier and parameter families."""
    docs: list[Doc] = []
    queries: list[Query] = []
    taken: set[str] = set()  # digit sets used, so no two families share an id
    for family in range(8):  # error codes
        chinese = family % 2 == 1
        codes = _permutations(rng, _digits(rng, 4, taken), ID_SIBLINGS)
        causes = rng.sample(ERROR_CAUSES, ID_SIBLINGS + 1)
        for sibling, (code, (cause, fix, cause_zh, fix_zh)) in enumerate(zip(codes, causes, strict=True)):
            robot = rng.choice(["tb3", "amr"])
            waypoint = rng.randint(100, 999)
            text = (
                f"{ROBOTS[robot][0]} 在 WP-{waypoint} 报错 E-{code}（{cause_zh}），{fix_zh}后恢复。"
                if chinese
                else f"{ROBOTS[robot][0]} stopped with error E-{code} ({cause}) at waypoint WP-{waypoint}; "
                f"cleared by {fix}."
            )
            ctx = context(robot=robot, task=("corridor_navigation", False, None))
            ctx["error_code"] = f"E-{code}"
            docs.append(Doc(f"id_err{family}_{sibling}", text, N, ctx))
        question = f"错误 E-{codes[0]} 是怎么排除的？" if chinese else f"How was error E-{codes[0]} cleared?"
        queries.append(Query(question, [f"id_err{family}_0"], ["identifier"]))
    for family in range(8):  # camera serials
        chinese = family % 2 == 1
        serials = _permutations(rng, "0" + _digits(rng, 3, taken), ID_SIBLINGS)
        for sibling, serial in enumerate(serials):
            error = round(rng.uniform(0.12, 0.95), 2)
            images = rng.randint(20, 60)
            robot = rng.choice(["franka", "ur5e", "fetch"])
            text = (
                f"相机 cam-{serial} 在 {ROBOTS[robot][0]} 上标定完成：{images} 张图，重投影误差 {error} 像素。"
                if chinese
                else f"Camera cam-{serial} on {ROBOTS[robot][0]} calibrated from {images} images: "
                f"reprojection error {error} px."
            )
            ctx = context(robot=robot)
            ctx["camera"] = f"cam-{serial}"
            docs.append(Doc(f"id_cam{family}_{sibling}", text, "calibration", ctx))
        question = (
            f"相机 cam-{serials[0]} 的重投影误差是多少？"
            if chinese
            else f"What reprojection error did camera cam-{serials[0]} reach?"
        )
        queries.append(Query(question, [f"id_cam{family}_0"], ["identifier"]))
    for family in range(8):  # gripper firmware versions
        chinese = family % 2 == 1
        base = _digits(rng, 3, taken)
        versions = [".".join([v[0], v[1], v[2] + str(family)]) for v in _permutations(rng, base, ID_SIBLINGS)]
        notes = rng.sample(FIRMWARE_NOTES, ID_SIBLINGS + 1)
        for sibling, (version, (note, note_zh)) in enumerate(zip(versions, notes, strict=True)):
            robot = rng.choice(["franka", "ur5e"])
            text = (
                f"{ROBOTS[robot][0]} 的夹爪固件 {version} {note_zh}。"
                if chinese
                else f"Gripper firmware {version} on {ROBOTS[robot][0]} {note}."
            )
            ctx = context(robot=robot)
            ctx["firmware"] = version
            docs.append(Doc(f"id_fw{family}_{sibling}", text, M, ctx))
        question = (
            f"夹爪固件 {versions[0]} 改了什么？"
            if chinese
            else f"What did gripper firmware {versions[0]} change?"
        )
        queries.append(Query(question, [f"id_fw{family}_0"], ["identifier"]))
    for family in range(8):  # battery packs
        chinese = family % 2 == 1
        packs = _permutations(rng, _digits(rng, 3, taken), ID_SIBLINGS)
        for sibling, pack in enumerate(packs):
            minutes = rng.randint(25, 75)
            cycles = rng.randint(40, 400)
            text = (
                f"电池包 BP-{pack} 在 go1-01 上满电可跑 {minutes} 分钟，已循环 {cycles} 次。"
                if chinese
                else f"Battery pack BP-{pack} gives go1-01 {minutes} min of walking per charge after {cycles} cycles."
            )
            ctx = context(robot="go1", env="real")
            ctx["battery"] = f"BP-{pack}"
            docs.append(Doc(f"id_bp{family}_{sibling}", text, L, ctx))
        question = (
            f"电池包 BP-{packs[0]} 能跑多久？"
            if chinese
            else f"How long does battery pack BP-{packs[0]} last?"
        )
        queries.append(Query(question, [f"id_bp{family}_0"], ["identifier"]))
    choices = (
        [80, 100, 120, 150, 180, 210, 240],
        [0.2, 0.4, 0.5, 0.8, 1.2, 1.5],
        [1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
    )
    tuned: set[tuple[float, ...]] = set()  # every document's gains differ from every other's
    for family in range(16):  # PID gains: the question is the values only
        chinese = family % 2 == 1
        joint = rng.randint(1, 7)
        gains: list[tuple[float, ...]] = []
        while not gains:
            first = tuple(float(rng.choice(options)) for options in choices)
            if first not in tuned:
                gains.append(first)
        while len(gains) < ID_SIBLINGS + 1:  # siblings share two of the three gains
            changed = rng.randrange(3)
            candidate = list(gains[0])
            candidate[changed] = float(rng.choice(choices[changed]))
            if tuple(candidate) not in gains and tuple(candidate) not in tuned:
                gains.append(tuple(candidate))
        tuned.update(gains)
        kp, ki, kd = (f"{v:g}" for v in gains[0])
        for sibling, (p, i, d) in enumerate((f"{v:g}" for v in g) for g in gains):
            overshoot = rng.randint(1, 18)
            settling = round(rng.uniform(0.15, 0.9), 2)
            text = (
                f"关节 {joint} 的 PID 调成 kp={p}，ki={i}，kd={d}：超调 {overshoot} %，稳定时间 {settling} 秒。"
                if chinese
                else f"Joint {joint} PID tuned to kp={p}, ki={i}, kd={d}: overshoot {overshoot} %, settling {settling} s."
            )
            ctx = context(
                robot="ur5e", params={"kp": (float(p), ""), "ki": (float(i), ""), "kd": (float(d), "")}
            )
            docs.append(Doc(f"pid{family}_{sibling}", text, C, ctx))
        question = f"kp={kp}、ki={ki}、kd={kd} 的调参结果" if chinese else f"kp={kp}, ki={ki}, kd={kd}"
        queries.append(Query(question, [f"pid{family}_0"], ["parameter"]))
    # Check: the id or the gains a question names are in its gold document and in no other.
    for query in queries:
        assert isinstance(query.gold, list)
        named = re.findall(r"E-\d+|cam-\d+|BP-\d+|\d+\.\d+\.\d+|k[pid]=[\d.]+", query.text)
        holding = [
            d.slug
            for d in docs
            if all(re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.]|-\d)", d.text) for name in named)
        ]
        if not named or holding != query.gold:
            raise SystemExit(f"{query.text!r}: named {named} is held by {holding}, gold {query.gold}")
    return docs, queries


def lookup(ctx: dict[str, Any], path: str) -> Any:
    value: Any = ctx
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def is_push_episode(d: Doc) -> bool:
    return d.slug.startswith(("push_ep", "z_push_ep"))


def near(field_path: str, point: list[float], radius: float) -> Callable[[Doc], bool]:
    return lambda d: (
        lookup(d.context, field_path) is not None and distance(lookup(d.context, field_path), point) <= radius
    )


def add_templated_queries() -> None:
    ask("Episode 37 push result", ["push_ep37"], "exact")
    ask("第 112 回合推方块的结果", ["z_push_ep112"], "exact")
    ask(
        "push episodes where the block ended near the target spot",
        lambda d: is_push_episode(d) and near("spatial.object_position", SPOT_EN, 0.03)(d),
        "spatial",
        ss={"field": "spatial.object_position", "target": SPOT_EN, "max_distance": 0.03},
    )
    ask(
        "方块最后停在这个位置附近的推动回合",
        lambda d: is_push_episode(d) and near("spatial.object_position", SPOT_ZH, 0.03)(d),
        "spatial",
        ss={"field": "spatial.object_position", "target": SPOT_ZH, "max_distance": 0.03},
    )
    ask(
        "push episodes that timed out at the 50-step limit",
        lambda d: is_push_episode(d),
        "outcome_filter",
        cf={"task.success": False, "task.steps": {"$gte": 50}},
    )
    ask(
        "成功且少于 20 步的推动回合",
        lambda d: is_push_episode(d),
        "outcome_filter",
        cf={"task.success": True, "task.steps": {"$lt": 20}},
    )
    ask(
        "tennis ball grasp trials with a light grip",
        lambda d: d.context.get("object") == "tennis ball",
        "numeric_filter",
        cf={"params.grip_force.value": {"$lt": 12}},
    )
    ask(
        "failed runs in corridor A",
        lambda d: d.context.get("corridor") == "A",
        "outcome_filter",
        cf={"task.success": False, "task.name": "corridor_navigation"},
    )
    ask(
        "navigation runs that finished at the loading bay",
        lambda d: d.slug.startswith(("nav_run", "z_nav_run")),
        "spatial",
        ss={"field": "spatial.position", "target": DOCK, "max_distance": 0.5},
    )
    ask(
        "what happened when picking from the tool rack",
        ["m_screwdriver"],
        "spatial",
        ss={"field": "spatial.object_position", "target": [0.60, -0.20, 0.05], "max_distance": 0.1},
    )
    ask(
        "notes about the doorway at this spot",
        ["n_doorway"],
        "spatial",
        ss={"field": "spatial.position", "target": [4.3, 7.8, 0.0], "max_distance": 0.5},
    )
    ask(
        "大厅入口附近导航要注意什么",
        ["n_glass_wall"],
        "spatial",
        "cross_lingual",
        ss={"field": "spatial.position", "target": [0.6, 1.1, 0.0], "max_distance": 0.5},
    )
    ask(
        "slow speed caps for tricky spots",
        ["n_ramp", "z_n_narrow"],
        "numeric_filter",
        cf={"params.max_speed.value": {"$lte": 0.2}},
    )
    ask(
        "真机上成功的草莓或番茄采摘",
        ["z_strawberry", "m_tomato"],
        "outcome_filter",
        cf={"task.success": True, "env.sim_or_real": "real"},
    )
    ask(
        "快速小跑的步态测试",
        lambda d: d.slug.startswith(("gait_test", "z_gait_test")),
        "numeric_filter",
        cf={"params.speed.value": {"$gt": 1.2}},
    )


# --------------------------------------------------------------------------------------------------------
# Checks and output
# --------------------------------------------------------------------------------------------------------
EN_STOPWORD_TEXT = """
a an the of to in on at by for with and or but is are was were be been it its it's this that these those
how why what which when who whom do does did can could may might should would will not no so than then
from into over under up down out our we you they them their i my me
"""
ZH_STOPWORD_TEXT = "的 了 时 是 在 有 和 与 也 都 就 会 要 把 被 后 前 中 上 下 很 个 多 吗 呢 么"
EN_STOPWORDS = frozenset(EN_STOPWORD_TEXT.split())
ZH_STOPWORDS = frozenset(ZH_STOPWORD_TEXT.split())


def content_words(text: str) -> set[str]:
    """Lower-cased content words (English stems and Chinese words) used by the paraphrase check."""
    import rjieba

    words: set[str] = set()
    for token in rjieba.cut(text.lower()):
        for part in re.findall(r"[a-z]+|[0-9]+(?:\.[0-9]+)?|[\u4e00-\u9fff]+", token):
            if part in EN_STOPWORDS or part in ZH_STOPWORDS:
                continue
            for suffix in ("ing", "ed", "es", "s"):
                if (
                    part.isascii()
                    and part.isalpha()
                    and len(part) > len(suffix) + 2
                    and part.endswith(suffix)
                ):
                    part = part[: -len(suffix)]
                    break
            words.add(part)
    return words


def matches(d: Doc, condition_filter: dict[str, Any] | None) -> bool:
    if not condition_filter:
        return True
    for path, condition in condition_filter.items():
        value = (
            d.type
            if path == "type"
            else d.perception_type
            if path == "perception_type"
            else lookup(d.context, path)
        )
        if isinstance(condition, dict):
            for operator, operand in condition.items():
                if value is None or isinstance(value, (bool, str)) and operator.startswith(("$lt", "$gt")):
                    return False
                if not {
                    "$lt": lambda v, o: v < o,
                    "$lte": lambda v, o: v <= o,
                    "$gt": lambda v, o: v > o,
                    "$gte": lambda v, o: v >= o,
                }[operator](value, operand):
                    return False
        elif value != condition:
            return False
    return True


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" for char in text)


def resolve(queries: Iterable[Query], docs: list[Doc]) -> list[tuple[Query, list[str]]]:
    by_slug = {d.slug: d for d in docs}
    resolved = []
    problems = []
    for query in queries:
        admitted = [d for d in docs if matches(d, query.context_filter)]
        if query.spatial_sort:
            ss = query.spatial_sort
            admitted = [d for d in admitted if near(ss["field"], ss["target"], ss["max_distance"])(d)]
        if callable(query.gold):
            gold = [d.slug for d in admitted if query.gold(d)]
        else:
            gold = list(query.gold)
            missing = [slug for slug in gold if slug not in by_slug]
            if missing:
                problems.append(f"{query.text!r}: unknown slugs {missing}")
                continue
            if query.context_filter:
                rejected = [slug for slug in gold if not matches(by_slug[slug], query.context_filter)]
                if rejected:
                    problems.append(f"{query.text!r}: gold fails its filter: {rejected}")
                extra = [d.slug for d in admitted if d.slug not in gold]
                print(
                    f"filter {query.text!r}: admitted besides gold ({len(extra)}): {extra[:12]}",
                    file=sys.stderr,
                )
        if not 1 <= len(gold) <= 3:
            problems.append(f"{query.text!r}: gold has {len(gold)} documents: {gold}")
        if "paraphrase" in query.tags:
            shared = set.union(*(content_words(query.text) & content_words(by_slug[s].text) for s in gold))
            if shared:
                problems.append(f"{query.text!r}: paraphrase shares {sorted(shared)}")
        if "cross_lingual" in query.tags and any(
            is_chinese(by_slug[s].text) == is_chinese(query.text) for s in gold
        ):
            problems.append(f"{query.text!r}: cross-lingual gold in the query language")
        resolved.append((query, gold))
    if problems:
        raise SystemExit("evaluation set checks failed:\n  " + "\n  ".join(problems))
    return resolved


def main() -> None:
    rng = random.Random(SEED)
    add_templated_queries()
    docs = ANCHORS + build_templated(rng)
    identified, asked = build_identifiers(random.Random(SEED + 1))
    docs += identified
    QUERIES.extend(asked)
    slugs = [d.slug for d in docs]
    duplicates = {slug for slug in slugs if slugs.count(slug) > 1}
    if duplicates:
        raise SystemExit(f"duplicate slugs: {sorted(duplicates)}")
    resolved = resolve(QUERIES, docs)
    order = list(range(len(docs)))
    rng.shuffle(order)
    ids = {docs[index].slug: f"d{position:03d}" for position, index in enumerate(order, start=1)}
    lines = []
    for index in order:
        d = docs[index]
        row: dict[str, Any] = {
            "kind": "document",
            "id": ids[d.slug],
            "text": d.text,
            "context": d.context,
            "collection": d.collection,
            "type": d.type,
            "lang": "zh" if is_chinese(d.text) else "en",
        }
        if d.perception_type:
            row["perception_type"] = d.perception_type
        lines.append(row)
    for number, (query, gold) in enumerate(resolved, start=1):
        row = {
            "kind": "query",
            "id": f"q{number:03d}",
            "query": query.text,
            "gold": [ids[s] for s in gold],
            "lang": "zh" if is_chinese(query.text) else "en",
            "tags": query.tags,
            # Fixed by the query's number before any channel was scored: odd numbers tune, even confirm.
            "split": "tune" if number % 2 else "heldout",
        }
        if query.context_filter:
            row["context_filter"] = query.context_filter
        if query.spatial_sort:
            row["spatial_sort"] = query.spatial_sort
        lines.append(row)
    OUTPUT.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in lines), encoding="utf-8")
    zh_docs = sum(is_chinese(d.text) for d in docs)
    zh_queries = sum(is_chinese(q.text) for q, _ in resolved)
    print(f"wrote {OUTPUT}: {len(docs)} documents ({zh_docs} zh), {len(resolved)} queries ({zh_queries} zh)")


if __name__ == "__main__":
    main()
