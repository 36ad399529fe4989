"""Maintenance commands: ``robotmem repair``, ``robotmem backup PATH`` and ``robotmem doctor --repair``."""

from __future__ import annotations

import argparse
from typing import Any

from robotmem.adapters.cli import open_memory, print_json


def _repair(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        result = mem.repair()
    print_json(result)
    return 0 if result["ok"] else 1


def _check(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        report = mem.integrity_report()
    print_json(report)
    return 0 if report["ok"] else 1


def _backup(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        print_json(mem.backup(args.path))
    return 0


def _doctor_with_repair(plain_doctor: Any) -> Any:
    """Return a ``doctor`` runner that repairs first when ``--repair`` is given."""

    def run(args: argparse.Namespace) -> int:
        if not getattr(args, "repair", False):
            return int(plain_doctor(args))
        with open_memory(args) as mem:
            repaired = mem.repair()
            report = mem.doctor()
        report["repair"] = repaired
        print_json(report)
        return 0 if repaired["ok"] and report["ok"] else 1

    return run


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``repair``, ``check`` and ``backup``, and give the existing ``doctor`` a ``--repair`` flag."""
    subparsers.add_parser(
        "repair", parents=[common], help="rebuild the search indexes from the memories table"
    ).set_defaults(run=_repair)
    subparsers.add_parser(
        "check", parents=[common], help="check the file and indexes in depth, changing nothing"
    ).set_defaults(run=_check)
    backup = subparsers.add_parser(
        "backup", parents=[common], help="copy the database to a new file (safe while in use)"
    )
    backup.add_argument("path", help="the backup file to create (must not exist)")
    backup.set_defaults(run=_backup)
    doctor = subparsers.choices.get("doctor")
    if doctor is not None:
        doctor.add_argument(
            "--repair", action="store_true", help="rebuild the search indexes first, then report"
        )
        doctor.set_defaults(run=_doctor_with_repair(doctor.get_default("run")))
