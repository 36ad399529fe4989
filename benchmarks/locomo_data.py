"""LoCoMo conversations read from a file outside the repository, and stored in robotmem as its README says.

The data's licence keeps it out of the repository: every function here takes the file's path or what was
read from it, and nothing is written anywhere but the temporary database (and, hashed, the vector cache).

    documents  every turn of every ``session_N``: ``"{speaker}: {text}"`` plus ``" [image: {caption}]"``
               when the turn has one, cut to 300 characters; context ``conv``, ``session``, ``dia_id``,
               ``speaker``, ``date`` (``session_N_date_time``); one collection per conversation
    questions  every ``qa`` item but category 5; gold = the ``evidence`` ids, split on ``;`` and spaces
    storing    plain (one ``learn`` per turn) or with sessions (each LoCoMo session a robotmem session)
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robotmem import RobotMemory

MAX_CHARS = 300
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
# Fixed before any run, by position in the file: the first three conversations tune, the last two check.
SPLITS = {"tune": ("conv-26", "conv-30", "conv-41"), "check": ("conv-42", "conv-43")}
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;\s]+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation."""

    dia_id: str
    session: int
    position: int  # 0-based position within its session
    speaker: str
    text: str
    caption: str  # the image caption, "" when the turn shows no image
    date: str  # the session's date and time, as the data writes it

    @property
    def memory_text(self) -> str:
        """The memory stored for the turn."""
        text = f"{self.speaker}: {self.text}"
        if self.caption:
            text += f" [image: {self.caption}]"
        return text[:MAX_CHARS]


@dataclass(frozen=True, slots=True)
class Question:
    """A question with the turns that answer it."""

    id: str  # "{conv}#{index in qa}"
    conv: str
    text: str
    category: int
    gold: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns in order, its sessions' dates and its questions (category 5 left out)."""

    sample_id: str
    turns: tuple[Turn, ...]
    dates: dict[int, str]
    questions: tuple[Question, ...]


def parse_evidence(raw: Iterable[Any]) -> tuple[str, ...]:
    """Return the evidence ids of a qa item: each entry split on ``;`` and white space, empties dropped."""
    ids: dict[str, None] = {}
    for entry in raw:
        for part in _EVIDENCE_SEPARATORS.split(str(entry)):
            if part:
                ids.setdefault(part, None)
    return tuple(ids)


def load_conversations(path: Path) -> list[Conversation]:
    """Read the conversations of a LoCoMo file (a JSON list of samples)."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    return [_conversation(sample) for sample in samples]


def _conversation(sample: dict[str, Any]) -> Conversation:
    conv = sample["conversation"]
    numbers = sorted(
        int(match.group(1))
        for key, value in conv.items()
        if (match := _SESSION_KEY.fullmatch(key)) and isinstance(value, list)
    )
    dates = {n: str(conv.get(f"session_{n}_date_time", "")) for n in numbers}
    turns = tuple(
        Turn(
            dia_id=str(turn["dia_id"]),
            session=n,
            position=position,
            speaker=str(turn["speaker"]),
            text=str(turn["text"]),
            caption=str(turn.get("blip_caption") or ""),
            date=dates[n],
        )
        for n in numbers
        for position, turn in enumerate(conv[f"session_{n}"])
    )
    sample_id = str(sample["sample_id"])
    questions = tuple(
        Question(
            id=f"{sample_id}#{index}",
            conv=sample_id,
            text=str(item["question"]),
            category=int(item["category"]),
            gold=parse_evidence(item.get("evidence", [])),
        )
        for index, item in enumerate(sample["qa"])
        if int(item["category"]) != ADVERSARIAL
    )
    return Conversation(sample_id, turns, dates, questions)


def split_of(sample_id: str) -> str | None:
    """Return ``tune`` or ``check`` for a conversation of this half, None for any other."""
    return next((name for name, ids in SPLITS.items() if sample_id in ids), None)


def choose(conversations: Sequence[Conversation], split: str) -> list[Conversation]:
    """Return the conversations of ``split`` (``all``: every one)."""
    if split == "all":
        return list(conversations)
    return [c for c in conversations if split_of(c.sample_id) == split]


def turn_context(conv: Conversation, turn: Turn) -> dict[str, Any]:
    """The context stored with a turn."""
    return {
        "conv": conv.sample_id,
        "session": turn.session,
        "dia_id": turn.dia_id,
        "speaker": turn.speaker,
        "date": turn.date,
    }


@dataclass
class Stored:
    """The conversations stored in one RobotMemory: which turns each memory holds, and how the load went."""

    sessions: bool
    turns_of: dict[int, list[Turn]] = field(default_factory=dict)  # memory id → turns it holds
    memory_of: dict[tuple[str, str], int] = field(default_factory=dict)  # (conv, dia_id) → memory id
    duplicates: int = 0  # turns learn reported as a duplicate of an earlier memory
    superseded: int = 0  # memories end_session merged into another
    load_s: float = 0.0

    def hold(self, conv: str, turn: Turn, memory_id: int) -> None:
        self.turns_of.setdefault(memory_id, []).append(turn)
        self.memory_of[(conv, turn.dia_id)] = memory_id


def store(mem: RobotMemory, conversations: Sequence[Conversation], *, sessions: bool) -> Stored:
    """Store every turn of ``conversations`` in ``mem``, one collection per conversation."""
    started = time.perf_counter()
    stored = Stored(sessions=sessions)
    for conv in conversations:
        by_session: dict[int, list[Turn]] = {}
        for turn in conv.turns:
            by_session.setdefault(turn.session, []).append(turn)
        for number, turns in by_session.items():
            session_id = None
            if sessions:
                context = {"conv": conv.sample_id, "session": number, "date": conv.dates[number]}
                session_id = mem.start_session(context=context, collection=conv.sample_id)["session_id"]
            for turn in turns:
                learned = mem.learn(
                    insight=turn.memory_text,
                    context=turn_context(conv, turn),
                    collection=conv.sample_id,
                    session_id=session_id,
                )
                duplicate = learned["status"] == "duplicate"
                stored.duplicates += duplicate
                stored.hold(conv.sample_id, turn, int(learned["existing_id" if duplicate else "memory_id"]))
            if session_id is not None:
                ended = mem.end_session(session_id)
                stored.superseded += int(ended["consolidated"]["superseded_count"])
    stored.load_s = time.perf_counter() - started
    return stored


class CachedPassages:
    """Wraps an embedder: passage vectors come from a cache kept between runs, queries from the model.

    Storing the conversations embeds about 2,800 turns (several minutes on a busy 2-core CPU); the cache
    file keys each vector by the SHA-256 of its text, so it holds no text. Queries are embedded on every
    recall, so recall times include the query embedding, unless ``cache_queries`` is set.
    """

    def __init__(self, base: Any, path: Path, *, cache_queries: bool = False) -> None:
        self.base = base
        self.path = path
        self.cache_queries = cache_queries
        self._vectors: dict[str, Any] = {}
        self._queries: dict[str, Any] = {}
        self._dirty = False
        if path.exists():
            with np.load(path, allow_pickle=False) as data:
                self._vectors = dict(zip((str(k) for k in data["keys"]), data["vectors"], strict=True))

    @property
    def model_id(self) -> str:
        return str(self.base.model_id)

    @property
    def dim(self) -> int:
        return int(self.base.dim)

    @property
    def available(self) -> bool:
        return bool(self.base.available)

    @property
    def status(self) -> str:
        return f"cached passages of {self.base.status}"

    def prime(self, texts: Iterable[str], batch: int = 32) -> None:
        """Embed the passages not cached yet, in batches, and save the cache."""
        missing = [t for t in dict.fromkeys(texts) if _key(t) not in self._vectors]
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            for text, vector in zip(chunk, self.base.embed_batch(chunk, is_query=False), strict=True):
                self._vectors[_key(text)] = np.asarray(vector, dtype=np.float32)
            self._dirty = True
        self.save()

    def prime_queries(self, texts: Iterable[str], batch: int = 32) -> None:
        """Embed the queries ahead (with ``cache_queries``), so no timed recall pays for one."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            for text, vector in zip(chunk, self.base.embed_batch(chunk, is_query=True), strict=True):
                self._queries[text] = np.asarray(vector, dtype=np.float32)

    def save(self) -> None:
        if not self._dirty:
            return
        keys = list(self._vectors)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(self.path, keys=np.array(keys), vectors=np.stack([self._vectors[k] for k in keys]))
        self._dirty = False

    def embed_one(self, text: str, *, is_query: bool = False) -> Any:
        if is_query:
            if not self.cache_queries:
                return self.base.embed_one(text, is_query=True)
            if text not in self._queries:
                self._queries[text] = self.base.embed_one(text, is_query=True)
            return self._queries[text]
        key = _key(text)
        if key not in self._vectors:
            self._vectors[key] = np.asarray(self.base.embed_one(text, is_query=False), dtype=np.float32)
            self._dirty = True
        return self._vectors[key]

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> Any:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.embed_one(t, is_query=is_query) for t in texts])

    def close(self) -> None:
        self.save()
        self.base.close()


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
