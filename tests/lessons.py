"""Lesson pairs shared by the dedup and consolidation tests.

``OPPOSITES_*`` are two lessons that contradict each other in a word that no list in robotmem names (sizes,
weights, states, colours, directions, single Chinese characters) or that the old word lists named; each must
be stored as two lessons and never merged. ``VARIANTS_*`` are two wordings of one lesson (exact repeat,
case, punctuation, unit spacing, contraction, filler words and phrases) whose word Jaccard stays at or
above learn's 0.7, so learn must call the second a duplicate.
"""

from __future__ import annotations

OPPOSITES_EN = [
    ("Use a large gripper for the red box", "Use a small gripper for the red box"),
    ("The payload is heavy for the wrist joint", "The payload is light for the wrist joint"),
    ("The doorway is wide enough for the cart", "The doorway is narrow enough for the cart"),
    ("The lidar is online during the mapping run", "The lidar is offline during the mapping run"),
    ("The motor current is normal after the restart", "The motor current is abnormal after the restart"),
    ("The magnet is strong enough to hold the plate", "The magnet is weak enough to hold the plate"),
    ("Hold the part when the conveyor stops", "Release the part when the conveyor stops"),
    ("The calibration marker is present on the tray", "The calibration marker is absent on the tray"),
    ("Use the hard gripper pads for the tomatoes", "Use the soft gripper pads for the tomatoes"),
    ("Park the robot at the north end of the aisle", "Park the robot at the south end of the aisle"),
    ("Take the long route around the pallet", "Take the short route around the pallet"),
    ("Cross the aisle when the beacon is green", "Cross the aisle when the beacon is red"),
    ("The camera lens is clean after the shift", "The camera lens is dirty after the shift"),
    ("Grip the thick cable near the connector", "Grip the thin cable near the connector"),
    ("The target is within reach of the arm", "The target is beyond reach of the arm"),
    ("The clutch is engaged during homing", "The clutch is released during homing"),
    ("The gripper fingers are aligned with the slot", "The gripper fingers are misaligned with the slot"),
    ("The spindle is idle when the door opens", "The spindle is running when the door opens"),
    ("Operators may enter the cell during homing", "Operators must enter the cell during homing"),
    (
        "It is safe to move the arm while the safety door is open",
        "It is unsafe to move the arm while the safety door is open",
    ),
    (
        "It is safe to move the arm while the safety door is open",
        "It is safe to move the arm while the safety door is closed",
    ),
    (
        "The lidar detects the glass wall in corridor B",
        "The lidar doesn't detect the glass wall in corridor B",
    ),
    (
        "Keep the vacuum pump on while the cup holds the box",
        "Keep the vacuum pump off while the cup holds the box",
    ),
    ("Open the door before you close the gripper", "Close the door before you open the gripper"),
    ("Right: keep 30 cm clearance from the rack", "Keep 30 cm clearance from the rack"),
]
OPPOSITES_ZH = [
    ("开门时不要移动机械臂", "关门时不要移动机械臂"),
    ("用大夹爪抓红色箱子", "用小夹爪抓红色箱子"),
    ("重启后电机电流正常", "重启后电机电流异常"),
    ("回零前先锁定关节", "回零前先解锁关节"),
    ("门是开的", "门是关的"),
    ("这个箱子很重", "这个箱子很轻"),
    ("传送带停下时抓住零件", "传送带停下时放开零件"),
    ("绿灯时穿过通道", "红灯时穿过通道"),
    ("机器人电池正在充电", "机器人电池正在放电"),
    ("夹爪与插槽对准", "夹爪与插槽偏离"),
    ("安全门打开时移动机械臂是安全的", "安全门打开时移动机械臂是不安全的"),
    ("安全门打开时允许移动机械臂", "安全门打开时禁止移动机械臂"),
    ("激光雷达能看到走廊里的玻璃墙", "激光雷达看不到走廊里的玻璃墙"),
]
OPPOSITES = OPPOSITES_EN + OPPOSITES_ZH

VARIANTS_EN = [
    ("Use a large gripper for the red box", "Use a large gripper for the red box"),
    ("Use a large gripper for the red box", "use a LARGE gripper for the Red Box"),
    ("Use a large gripper for the red box", "Use a large gripper, for the red box!"),
    (
        "The gripper holds the glass bottle at 20N near the neck without slipping",
        "The gripper holds the glass bottle at 20 N near the neck without slipping.",
    ),
    (
        "The lidar doesn't detect the glass wall in corridor B near the dock",
        "The lidar does not detect the glass wall in corridor B near the dock",
    ),
    ("Use a large gripper for the red box", "Most importantly, use a large gripper for the red box"),
    ("Use a large gripper for the red box", "As noted before, use a large gripper for the red box"),
    ("Use a large gripper for the red box", "Right, use a large gripper for the red box"),
    ("Use a large gripper for the red box", "Note: use a large gripper for the red box"),
    ("Use a large gripper for the red box", "Basically, use a large gripper for the red box"),
    ("The spindle is idle when the door opens", "The spindle is actually idle when the door opens"),
    ("The payload is heavy for the wrist joint", "The payload is really heavy for the wrist joint"),
    (
        "Keep the vacuum pump off while the cup holds the box",
        "Please keep the vacuum pump off while the cup holds the box",
    ),
]
VARIANTS_ZH = [
    ("开门时不要移动机械臂", "开门时不要移动机械臂"),
    ("开门时不要移动机械臂", "开门时，不要移动机械臂。"),
    ("开门时不要移动机械臂", "如上所述，开门时不要移动机械臂"),
    ("开门时不要移动机械臂", "总之，开门时不要移动机械臂"),
    ("门是开的", "门是开的吧"),
    ("这个箱子很重", "其实这个箱子很重"),
    ("绿灯时穿过通道", "注意：绿灯时穿过通道"),
    ("AGV 在黄线处停车", "agv 在黄线处停车"),
    ("夹持力 20N 时玻璃瓶在传送带上不会滑动", "夹持力 20 N 时玻璃瓶在传送带上不会滑动"),
]
VARIANTS = VARIANTS_EN + VARIANTS_ZH
