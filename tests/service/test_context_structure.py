"""Episodes grouped by a context value (episode_field) and dates a query names (date_boost), on real stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings

# A conversation stored turn by turn, without robotmem sessions: its context says which session each
# turn belongs to. The answer to a question about the museum is two turns after the turn naming it.
TURNS = [
    (1, "I finally visited the lighthouse museum on the coast.", True),
    (1, "How was it?", True),
    (1, "Breathtaking: the old lenses glowed at sunset.", True),
    (1, "Glad you enjoyed the trip.", True),
    (2, "The garden needs watering before the heat wave.", True),
    (2, "Tomatoes are ripening early this year.", True),
    (2, "A second trip to the museum shop is planned.", False),
    (2, "Bought new seeds for the balcony pots.", True),
]
BM25_ONLY = {"vector_weight": 0.0, "context_boost": 0.0, "episode_share": 0.0, "direction_share": 0.0}


@pytest.fixture
def chat(locate: Callable[[str], Any], settings: Settings) -> Iterator[tuple[RobotMemory, list[int]]]:
    with RobotMemory(locate("chat.db"), settings=settings, embed_backend="hash") as mem:
        ids = []
        for session, text, kept in TURNS:
            learned = mem.learn(text, context={"session": session, "kept": kept}, collection="chat")
            assert learned["status"] == "created", text
            ids.append(int(learned["memory_id"]))
        yield mem, ids


def _recall(mem: RobotMemory, query: str, **changes: Any) -> list[int]:
    # Ranking mechanics on a few memories: the relevance gate is off (tests/service/test_relevance.py has it).
    mem.settings = mem.settings.replace(**{**BM25_ONLY, **changes})
    return [int(m["id"]) for m in mem.recall(query, n=4, collection="chat", min_relevance=0)["memories"]]


def test_a_context_value_makes_episodes_of_memories_learned_without_a_session(
    chat: tuple[RobotMemory, list[int]],
) -> None:
    mem, ids = chat
    query = "what was the lighthouse museum like"
    spread = {"neighbour_share": 0.5, "neighbour_span": 2}
    plain = _recall(mem, query, **spread)
    assert plain[0] == ids[0] and ids[2] not in plain  # no sessions: no episodes, no neighbours
    grouped = _recall(mem, query, **spread, episode_field="session")
    assert grouped[0] == ids[0] and ids[2] in grouped  # the answer, two turns on, shares no word
    assert ids[2] not in _recall(mem, query, neighbour_share=0.5, neighbour_span=1, episode_field="session")


def test_a_context_episode_ends_where_its_value_changes_and_passes_the_filters(
    chat: tuple[RobotMemory, list[int]],
) -> None:
    mem, ids = chat
    changes = {"neighbour_share": 0.5, "neighbour_span": 2, "episode_field": "session"}
    found = _recall(mem, "glad you enjoyed it", **changes)
    assert found[0] == ids[3] and {ids[1], ids[2]} <= set(found)
    assert ids[4] not in found  # learned right after, but in the next session
    mem.settings = mem.settings.replace(**{**BM25_ONLY, **changes})
    result = mem.recall(
        "trip to the museum", n=8, collection="chat", context_filter={"kept": True}, min_relevance=0
    )
    returned = [int(m["id"]) for m in result["memories"]]
    assert ids[6] not in returned and ids[3] in returned  # the filtered-out turn never joins


def test_a_memory_in_a_session_keeps_its_session_as_episode(
    chat: tuple[RobotMemory, list[int]],
) -> None:
    mem, ids = chat
    session = mem.start_session(collection="chat")["session_id"]
    inside = int(
        mem.learn(
            "Lenses of the lighthouse were polished.",
            context={"session": 1},
            session_id=session,
            collection="chat",
        )["memory_id"]
    )
    after = int(
        mem.learn("Ordered a lens cloth.", context={"session": 1}, session_id=session, collection="chat")[
            "memory_id"
        ]
    )
    mem.end_session(session)
    found = _recall(mem, "polished lenses", neighbour_share=0.5, neighbour_span=2, episode_field="session")
    assert found[0] == inside and after in found  # its session's neighbour
    assert ids[3] not in found  # the context group of session 1 holds only memories without a session


DATED = [
    ("Cooked a big dinner for the whole crew.", "9:12 am on 2 February, 2024"),
    ("Cooked pasta with friends.", "8:40 pm on 14 March, 2024"),
    ("Painted the fence.", "10:15 am on 14 March, 2024"),
]


def test_memories_dated_within_the_day_a_query_names_rise(
    locate: Callable[[str], Any], settings: Settings
) -> None:
    with RobotMemory(locate("dated.db"), settings=settings, embed_backend="hash") as mem:
        ids = [
            int(mem.learn(text, context={"date": date}, collection="diary")["memory_id"])
            for text, date in DATED
        ]
        query = "what did she cook for dinner on 14 March, 2024"

        def recall(boost: float) -> list[int]:
            mem.settings = mem.settings.replace(**BM25_ONLY, date_boost=boost)
            return [
                int(m["id"]) for m in mem.recall(query, n=3, collection="diary", min_relevance=0)["memories"]
            ]

        assert recall(0.0)[0] == ids[0]  # more words in common, another day
        assert recall(1.0)[:2] == [ids[1], ids[0]]  # the dinner of that day; the fence matched no word
        assert ids[2] not in recall(1.0)  # a date alone brings in nothing


def test_created_at_dates_a_memory_whose_context_has_no_date(
    locate: Callable[[str], Any], settings: Settings
) -> None:
    days = iter(
        [datetime(2026, 3, 14, 9, tzinfo=timezone.utc), datetime(2026, 3, 16, 9, tzinfo=timezone.utc)]
    )
    clock: Callable[[], datetime] = lambda: next(days, datetime(2026, 3, 16, 10, tzinfo=timezone.utc))  # noqa: E731
    with RobotMemory(locate("clock.db"), settings=settings, embed_backend="hash", clock=clock) as mem:
        first = int(mem.learn("Docking failed twice at station B.", collection="dock")["memory_id"])
        later = int(
            mem.learn(
                "Docking at station B: failures again, docking failures twice over.", collection="dock"
            )["memory_id"]
        )
        query = "docking failures at station B on 2026-03-14"
        mem.settings = mem.settings.replace(**BM25_ONLY, date_boost=0.0)
        plain = [int(m["id"]) for m in mem.recall(query, n=2, collection="dock", min_relevance=0)["memories"]]
        mem.settings = mem.settings.replace(date_boost=1.0)
        dated = [int(m["id"]) for m in mem.recall(query, n=2, collection="dock", min_relevance=0)["memories"]]
        assert plain == [later, first]  # more of the query's words
        assert dated == [first, later]  # the one of the day the query names


@pytest.mark.parametrize("field", ["session_id", "created_at", "context.session", "a..b", " session"])
def test_an_episode_field_that_is_not_a_context_path_is_refused(field: str) -> None:
    with pytest.raises(ValidationError, match="setting 'episode_field'"):
        Settings().replace(episode_field=field)


def test_a_date_boost_out_of_range_is_named() -> None:
    with pytest.raises(
        ValidationError, match=r"setting 'date_boost' is -1.0; accepted: a finite number within 0..10"
    ):
        Settings().replace(date_boost=-1.0)
