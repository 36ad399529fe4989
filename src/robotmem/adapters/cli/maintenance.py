"""``robotmem doctor [--repair]``, ``robotmem check``, ``robotmem repair`` and ``robotmem backup PATH``."""

from __future__ import annotations

import argparse
from typing import Any

from robotmem.adapters.cli.common import open_memory, print_json


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


def _doctor(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        if not args.repair:
            report = mem.doctor()
            print_json(report)
            return 0 if report["ok"] else 1
        repaired = mem.repair()
        report = mem.doctor()
    print_json({**report, "repair": repaired})
    return 0 if repaired["ok"] and report["ok"] else 1


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``doctor``, ``repair``, ``check`` and ``backup``."""
    doctor = subparsers.add_parser(
        "doctor", parents=[common], help="check the database, indexes and embedder"
    )
    doctor.add_argument("--repair", action="store_true", help="rebuild the search indexes first, then report")
    doctor.set_defaults(run=_doctor)
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
