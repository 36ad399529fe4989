"""``robotmem import-bag``, ``robotmem import-lerobot`` and ``robotmem export-mcap``: robot data in and out.

Each needs its extra (``robotmem[ros]``, ``robotmem[lerobot]``); without it the command says which to
install. Progress bars go to stderr, the JSON result to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from typing import Any

from robotmem import ValidationError
from robotmem.adapters.cli.common import ProgressBars, open_memory, print_json, progress_options


def _json_object(name: str, text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{name}: not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValidationError(f"{name}: expected a JSON object, got {type(value).__name__}")
    return value


def _split(option: str, text: str, sep: str, parts: int) -> list[str]:
    pieces = text.split(sep, parts - 1)
    if len(pieces) != parts or not all(pieces):
        raise ValidationError(f"{option}: expected {'X'.join(['…'] * parts).replace('X', sep)}, got {text!r}")
    return pieces


def bag_plan(args: argparse.Namespace) -> tuple[Any, Any]:
    """Return the ``(BagMap, Boundaries)`` of the map file and flags (flags add to or replace the file's)."""
    from robotmem.integrations.bag_map import BagMap, Boundaries, ObjectTopic, PoseTopic, load_map

    bag_map, bounds = load_map(args.map) if args.map else (BagMap(), Boundaries())
    poses = list(bag_map.poses)
    for spec in args.pose or []:
        name, rest = _split("--pose", spec, "=", 2)
        topic, _, field = rest.partition(":")
        poses = [p for p in poses if p.name != name] + [PoseTopic(name, topic, field or None)]
    updates: dict[str, Any] = {"poses": tuple(poses)}
    if args.joints:
        updates["joints"] = args.joints
    if args.joint_samples is not None:
        updates["joint_samples"] = args.joint_samples
    if args.outcome:
        topic, _, field = args.outcome.partition(":")
        updates.update(outcome=topic, outcome_field=field or "data")
    if args.objects:
        objects = bag_map.objects
        updates["objects"] = replace(objects, topic=args.objects) if objects else ObjectTopic(args.objects)
    if args.robot:
        updates["robot"] = {**bag_map.robot, **_json_object("--robot", args.robot)}
    if args.task:
        updates["task"] = {**bag_map.task, **_json_object("--task", args.task)}
    bag_map = BagMap(**{**bag_map.__dict__, **updates})
    if args.marker or args.window or args.gap:
        fields: dict[str, Any] = {}
        if args.marker:
            topic, _, field = args.marker.partition(":")
            fields.update(marker=topic, marker_field=field or "data")
            fields.update(start_value=args.start_value, end_value=args.end_value or None)
        if args.window:
            windows = []
            for text in args.window:
                a, b = _split("--window", text, ":", 2)
                try:
                    windows.append((float(a), float(b)))
                except ValueError:
                    raise ValidationError(f"--window: expected START:END seconds, got {text!r}") from None
            fields["windows"] = tuple(windows)
        if args.gap:
            topic, seconds = _split("--gap", args.gap, ":", 2)
            try:
                fields.update(gap_topic=topic, gap_s=float(seconds))
            except ValueError:
                raise ValidationError(f"--gap: expected TOPIC:SECONDS, got {args.gap!r}") from None
        bounds = Boundaries(**fields)
    return bag_map, bounds


def _warn(source: str, warnings: list[str]) -> None:
    for text in warnings:
        print(f"Warning: {source}: {text}", file=sys.stderr)


def _import_bag(args: argparse.Namespace) -> int:
    from robotmem.integrations.rosbag import import_bag

    bag_map, bounds = bag_plan(args)
    # Reading is drawn on a terminal only: it moves every thousand messages.
    bars = ProgressBars(enabled=not args.no_progress, units={"reading": "message"}, tty_only=("reading",))
    results = []
    try:
        with open_memory(args) as mem:
            for path in args.paths:
                result = import_bag(mem, path, bag_map, bounds, collection=args.collection, progress=bars)
                bars.close()
                _warn(result["bag"], result["warnings"])
                results.append(result)
    finally:
        bars.close()
    print_json(results[0] if len(results) == 1 else results)
    return 0


def _success_reward(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValidationError(f"--success-reward: expected a number or 'none', got {text!r}")
    return value


def _import_lerobot(args: argparse.Namespace) -> int:
    from robotmem.integrations.lerobot import SUCCESS_REWARD, import_lerobot

    success_reward = SUCCESS_REWARD if args.success_reward is None else _success_reward(args.success_reward)
    bars = ProgressBars(enabled=not args.no_progress, units={"reading": "file"}, tty_only=("reading",))
    try:
        with open_memory(args) as mem:
            result = import_lerobot(
                mem,
                args.path,
                state_key=args.state_key,
                success_reward=success_reward,
                collection=args.collection,
                progress=bars,
            )
    finally:
        bars.close()
    _warn(result["dataset"], result["warnings"])
    print_json(result)
    return 0


def _export_mcap(args: argparse.Namespace) -> int:
    from robotmem.integrations.mcap_export import export_mcap

    with open_memory(args) as mem:
        found = mem.recall(
            args.query,
            n=args.n,
            session_id=args.session_id,
            context_filter=args.context_filter,
            spatial_sort=args.spatial_sort,
            include_data=True,
            order="time" if args.session_id else "relevance",
        )
        print_json(export_mcap(found["memories"], args.path))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the data commands to the ``robotmem`` parser."""
    progress = progress_options()
    p = sub.add_parser(
        "import-bag",
        parents=[common, progress],
        help="import ROS bags (rosbag2 sqlite3/MCAP, ROS 1) as episodes; needs robotmem[ros]",
    )
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="rosbag2 directory, .mcap/.db3 file or ROS 1 .bag"
    )
    p.add_argument("--map", help="TOML or JSON map file (docs/bring-your-data.md); flags below add to it")
    p.add_argument("--pose", action="append", metavar="NAME=TOPIC[:FIELD]", help="a pose topic (repeatable)")
    p.add_argument(
        "--joints", metavar="TOPIC", help="sensor_msgs/JointState topic, sampled into a perception"
    )
    p.add_argument(
        "--joint-samples", dest="joint_samples", type=int, metavar="N", help="joint states kept (10)"
    )
    p.add_argument(
        "--outcome", metavar="TOPIC[:FIELD]", help="Bool, String or JSON outcome topic → task.success"
    )
    p.add_argument(
        "--objects", metavar="TOPIC", help="detection topic (vision_msgs) → sightings of objects, 1 a second"
    )
    p.add_argument("--robot", metavar="JSON", help="constant robot section")
    p.add_argument("--task", metavar="JSON", help="constant task section")
    p.add_argument("--marker", metavar="TOPIC[:FIELD]", help="episodes from marker messages")
    p.add_argument(
        "--start-value", dest="start_value", default="start", help="marker value opening an episode"
    )
    p.add_argument(
        "--end-value", dest="end_value", default="end", help="marker value closing one ('' = next start)"
    )
    p.add_argument(
        "--window", action="append", metavar="START:END", help="an episode in seconds from the bag start"
    )
    p.add_argument("--gap", metavar="TOPIC:SECONDS", help="episodes split by silences on a topic")
    p.set_defaults(run=_import_bag)

    p = sub.add_parser(
        "import-lerobot",
        parents=[common, progress],
        help="import a LeRobot dataset (v3.0, v2.x), one memory per episode; needs robotmem[lerobot]",
    )
    p.add_argument("path", metavar="PATH", help="dataset directory (with meta/info.json)")
    p.add_argument(
        "--state-key", dest="state_key", default="observation.state", help="frame column of the state vector"
    )
    p.add_argument(
        "--success-reward",
        dest="success_reward",
        metavar="REWARD",
        help="without a success column, success is a frame reward reaching REWARD (1.0); 'none': unknown",
    )
    p.set_defaults(run=_import_lerobot)

    p = sub.add_parser(
        "export-mcap",
        parents=[common],
        help="write recalled memories or an episode to an MCAP file for Foxglove; needs robotmem[ros]",
    )
    p.add_argument("path", metavar="PATH", help="MCAP file to create")
    p.add_argument("query", nargs="?", default="", metavar="QUERY", help="recall query (default: none)")
    p.add_argument("-n", type=int, help="memories to export (the recall default)")
    p.add_argument("--filter", dest="context_filter", metavar="JSON", help="the recall context_filter")
    p.add_argument("--spatial-sort", dest="spatial_sort", metavar="JSON", help="the recall spatial_sort")
    p.add_argument("--session-id", dest="session_id", help="one episode's memories, in time order")
    p.set_defaults(run=_export_mcap)
