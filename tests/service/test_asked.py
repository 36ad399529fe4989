"""A recall's source answers a repeated question from its first answer: the same answers as the engine's
source, with the engine asked only about memories no earlier answer placed (both engines)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from robotmem import RobotMemory
from robotmem.service.recall.asked import AskedOnce
from robotmem.store.protocol import CandidateSource, NamedValues, RecallScope


class Counting:
    """A source that counts the episodes and named values it is asked for (everything else passes)."""

    def __init__(self, source: CandidateSource) -> None:
        self.source = source
        self.episode_asks: list[list[int]] = []
        self.named_asks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        asked = list(ids)
        self.episode_asks.append(asked)
        return self.source.episodes(asked)

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        self.named_asks += 1
        return self.source.named_values(candidates, max_share)


def _log(memory: RobotMemory) -> tuple[list[list[int]], list[int]]:
    """Two sessions of four grasps each and three memories without a session; their ids."""
    sessions = []
    for run in range(2):
        session = memory.start_session(context={"robot": {"id": "arm-01"}})["session_id"]
        ids = [
            int(memory.learn(f"grasp {k} of run {run} on the mug", session_id=session)["memory_id"])
            for k in range(4)
        ]
        sessions.append(ids)
        memory.end_session(session)
    loose = [int(memory.learn(f"loose note {k} about the dock")["memory_id"]) for k in range(3)]
    return sessions, loose


def test_episodes_asked_twice_are_the_engines_and_asked_once(memory: RobotMemory) -> None:
    (first, second), loose = _log(memory)
    scope = RecallScope(memory.collection, 0.0)

    def check(tx: Any) -> None:
        raw = tx.candidates(scope)
        counting = Counting(raw)
        asked = AskedOnce(counting)  # type: ignore[arg-type]
        for ids in ([first[1]], [first[2], second[0], loose[0]], [*first, *second, *loose], [loose[1]]):
            assert asked.episodes(ids) == raw.episodes(ids)
        # Each memory was asked about once at most: the first session's others, then the second's.
        assert counting.episode_asks == [[first[1]], [second[0], loose[0]], [loose[1], loose[2]]], (
            first,
            second,
            loose,
        )
        assert asked.named_values({"arm-01", "mug"}, 0.5) == raw.named_values({"arm-01", "mug"}, 0.5)
        asked.named_values({"mug", "arm-01"}, 0.5)
        assert counting.named_asks == 1

    memory.engine.read(check)
