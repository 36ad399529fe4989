"""learn, update, forget and get_memory: writing and reading one memory.

Every function takes its operation's input, checked against the settings before anything is written
(``robotmem.formats.inputs``), embeds outside the write transaction (a model call never holds the write
lock), and changes the memory with everything derived from it (text index, tags, vector) in one
transaction.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from robotmem.formats.inputs import ForgetInput, LearnInput, MemoryIdInput, UpdateInput
from robotmem.formats.results import AutoInferred, ForgetResult, LearnResult, MemoryDetail, UpdateResult
from robotmem.formats.serialize import (
    auto_inferred,
    created_result,
    duplicate_result,
    forgotten,
    memory_detail,
    updated_result,
)
from robotmem.records import Memory, NewMemory
from robotmem.rules.dedup import (
    SCREEN_LIMIT,
    Duplicate,
    cosine_threshold,
    find_cosine_duplicate,
    find_jaccard_duplicate,
    same_experience_as,
)
from robotmem.rules.inheritance import inherited_context
from robotmem.service.engine import Engine, iso
from robotmem.store.protocol import FloatArray, StoreTx, VectorQuery
from robotmem.text.classify import Classification, build_context, classify
from robotmem.text.tokens import content_hash, index_text
from robotmem.text.wording import content_text

# Candidates the Jaccard check reads, and the vectors the cosine check compares.
JACCARD_CANDIDATES = 20
COSINE_CANDIDATES = 5


def learn(engine: Engine, args: LearnInput) -> LearnResult:
    """Store an experience unless the collection already holds it; see ``RobotMemory.learn``."""
    settings = engine.settings
    text = args.insight
    user_context = args.context_object
    target = engine.collection_for(args.collection)
    found = classify(text, user_context)
    stored_context = build_context(user_context, found, source="learn")
    digest = content_hash(text)
    vector = engine.embed(text, is_query=False)
    threshold = cosine_threshold(engine.embedder.model_id, settings.dedup_cosine)
    robot = engine.robot_id
    episode = _episode_vector(engine, text, args.session_id) if vector is not None else None

    def work(tx: StoreTx) -> LearnResult:
        session = engine.session_for_write(tx, args.session_id)
        writer, session_context = engine.inheritance(tx, session, robot)
        existing = tx.memories.find_exact(target, digest)
        if existing is not None:
            return duplicate_result(Duplicate("exact", existing, 1.0))
        duplicate = _near_duplicate(tx, text, target, vector, settings.dedup_jaccard, threshold)
        if duplicate is not None:
            return duplicate_result(duplicate)
        new = NewMemory(
            collection=target,
            type="fact",
            content=text,
            content_hash=digest,
            category=found.category,
            confidence=found.confidence,
            context=inherited_context(session_context, stored_context),
            scope_files=found.scope_files,
            scope_entities=found.scope_entities,
            session_id=session,
            perception_type=None,
            tags=found.tags,
            index_body=index_text(text),
            created_at=engine.now(),
            robot_id=args.robot_id or writer,
            observed_at=args.observed,
        )
        memory_id = engine.insert(tx, [new], [None if vector is None else vector.vector])[0]
        if episode is not None and episode[0] == session and vector is not None:
            tx.vectors.put_episode(memory_id, episode[1], vector.model_id)
        return created_result(memory_id, _inferred(found, stored_context))

    return engine.write(work)


def _episode_vector(engine: Engine, text: str, session_id: str | None) -> tuple[str, FloatArray] | None:
    """Return ``(session, vector)`` of ``text`` after its predecessor's in the session it joins, embedded
    together, when ``episode_vector_weight`` is on and the session holds a memory already; else None."""
    if engine.settings.recall.episode_vector_weight <= 0:
        return None
    session = session_id if session_id is not None else engine.current_session
    if session is None:
        return None
    previous = engine.read(lambda tx: tx.memories.latest_in_session(session))
    if previous is None:
        return None
    joined = engine.embed(f"{previous} {text}", is_query=False)
    return None if joined is None else (session, joined.vector)


def _inferred(found: Classification, stored_context: dict[str, Any]) -> AutoInferred:
    return auto_inferred(found, stored_context.get("params", {}))


def _near_duplicate(
    tx: StoreTx,
    text: str,
    collection: str,
    vector: VectorQuery | None,
    jaccard_threshold: float,
    cosine: float,
) -> Duplicate | None:
    """Return the stored fact ``text`` repeats in other words (Jaccard, then cosine), if any."""
    # Either kind of duplicate has the numbers of ``text`` (dedup.same_experience). When few stored texts
    # can have them, those few are every candidate: the closest of one experience is the duplicate, with no
    # ranked word search, and the vector scan is skipped when none is.
    screened = tx.memories.facts_with_numbers(collection, text, SCREEN_LIMIT)
    same_as_text = same_experience_as(text)
    same = None if screened is None else [(m, c) for m, c in screened if same_as_text(c)]
    if same is not None:
        duplicate = find_jaccard_duplicate(text, same, jaccard_threshold)
    else:
        # The search looks for the content words: a repeat may lack the filler of ``text`` ("the").
        wanted = content_text(text) or text
        ids = tx.memories.jaccard_candidates(collection, wanted, JACCARD_CANDIDATES, jaccard_threshold)
        duplicate = find_jaccard_duplicate(text, tx.memories.contents(ids), jaccard_threshold)
    if duplicate is None and vector is not None and same != []:
        near = tx.vectors.most_similar(vector, COSINE_CANDIDATES, cosine)
        if near:
            allowed = tx.memories.active_facts_among([m for m, _ in near], collection)
            texts = dict(tx.memories.contents([m for m, _ in near if m in allowed]))
            duplicate = find_cosine_duplicate(text, [(m, texts[m], s) for m, s in near if m in texts], cosine)
    return duplicate


def forget(engine: Engine, args: ForgetInput) -> ForgetResult:
    """Invalidate a memory so no search path returns it; see ``RobotMemory.forget``."""

    def work(tx: StoreTx) -> ForgetResult:
        memory = tx.memories.get_active(args.memory_id)
        tx.memories.invalidate(memory.id, args.reason, engine.now())
        tx.vectors.drop(memory.id)
        return forgotten(memory, args.reason)

    return engine.write(work)


def later_than(now: str, previous: str) -> str:
    """Return ``now``, or one microsecond after ``previous`` when the clock is not past it.

    Sync keeps the later ``updated_at`` (``robotmem.rules.versions``): an edit must be later than the version it
    edits even on a robot whose clock runs behind the one that wrote that version.
    """
    if now > previous:
        return now
    try:
        return iso(datetime.fromisoformat(previous) + timedelta(microseconds=1))
    except ValueError:
        return now


def update(engine: Engine, args: UpdateInput) -> UpdateResult:
    """Replace a memory's text (and context when given) and re-index it; see ``RobotMemory.update``."""
    text = args.new_content
    new_context = args.context_object
    vector = engine.embed(text, is_query=False)

    def work(tx: StoreTx) -> UpdateResult:
        memory = tx.memories.get_active(args.memory_id)
        user_context = new_context if new_context is not None else _user_context(memory)
        found = classify(text, user_context)
        stored_context = build_context(user_context, found, source=memory.context.get("source", "learn"))
        if new_context is not None and memory.session_id is not None:  # the session's context stays under it
            stored_context = inherited_context(tx.sessions.get(memory.session_id).context, stored_context)
        tx.memories.replace_content(
            memory.id,
            content=text,
            digest=content_hash(text),
            category="perception" if memory.type == "perception" else found.category,
            confidence=found.confidence,
            context=stored_context,
            scope_files=found.scope_files,
            scope_entities=found.scope_entities,
            tags=found.tags,
            index_body=index_text(text),
            now=later_than(engine.now(), memory.updated_at),
            observed_at=args.observed,
        )
        tx.vectors.drop(memory.id)
        engine.store_vector(tx, memory.id, None if vector is None else vector.vector)
        return updated_result(memory, text, _inferred(found, stored_context))

    return engine.write(work)


def get_memory(engine: Engine, args: MemoryIdInput) -> MemoryDetail:
    """Return the full record of a memory in any status; see ``RobotMemory.get_memory``."""

    def work(tx: StoreTx) -> MemoryDetail:
        memory = tx.memories.get(args.memory_id)
        data, metadata = tx.memories.payload(memory.id)
        return memory_detail(memory, data, metadata)

    return engine.read(work)


def _user_context(memory: Memory) -> dict[str, Any]:
    context = dict(memory.context)
    context.pop("source", None)
    return context
