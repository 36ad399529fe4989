"""start_session, end_session and get_session: episodes, their consolidation, decay and outcome."""

from __future__ import annotations

import uuid

from robotmem.formats.inputs import EndSessionInput, StartSessionInput
from robotmem.formats.results import EndSessionResult, SessionRecord, SessionSummary, StartSessionResult
from robotmem.formats.serialize import ended_session, session_summary, session_to_dict, started_session
from robotmem.formats.validation import parse_name
from robotmem.rules.consolidation import NON_DECAYING_CATEGORIES, ConsolidationPlan, plan_consolidation
from robotmem.service import recall
from robotmem.service.engine import Engine
from robotmem.store.protocol import StoreTx

# Texts of the ended session that make the query for related memories of other sessions.
RELATED_QUERY_TEXTS = 20


def start_session(engine: Engine, args: StartSessionInput) -> StartSessionResult:
    """Begin an episode that later writes without a session join; see ``RobotMemory.start_session``."""
    session_context = args.context_object
    target = engine.collection_for(args.collection)
    session_id = uuid.uuid4().hex

    def work(tx: StoreTx) -> StartSessionResult:
        tx.sessions.create(session_id, target, session_context, engine.now())
        return started_session(session_id, target, tx.sessions.active_memory_count(target))

    result = engine.write(work)
    engine.current_session = session_id
    return result


def end_session(engine: Engine, args: EndSessionInput) -> EndSessionResult:
    """End an episode: outcome, consolidation, decay, related memories; see ``RobotMemory.end_session``."""
    target_id = args.session_id
    settings = engine.settings

    def work(tx: StoreTx) -> tuple[str, SessionSummary, int, ConsolidationPlan, list[str]]:
        session = tx.sessions.get_active(target_id)
        now = engine.now()
        plan = plan_consolidation(
            tx.memories.consolidation_candidates(session.id, session.collection),
            settings.consolidation_jaccard,
        )
        for merge in plan.merges:
            tx.memories.supersede(merge.representative, merge.merged, now)
            for merged_id in merge.merged:
                tx.vectors.drop(merged_id)
        decayed = tx.memories.decay(session.collection, now, NON_DECAYING_CATEGORIES, settings.decay_rate)
        summary = session_summary(tx.sessions.summarize(session.id))
        tx.sessions.end(session.id, args.outcome_score, summary, now)
        return (
            session.collection,
            summary,
            decayed,
            plan,
            tx.memories.session_texts(session.id, RELATED_QUERY_TEXTS),
        )

    engine.store.settle_access()
    collection, summary, decayed, plan, texts = engine.write(work)
    if engine.current_session == target_id:
        engine.current_session = None
    # related_top_k = 0 spares the recall (a bulk import ends thousands of sessions and reads none).
    related = recall.related(engine, target_id, collection, texts) if settings.related_top_k > 0 else []
    return ended_session(target_id, summary, decayed, plan, related)


def get_session(engine: Engine, session_id: str) -> SessionRecord:
    """Return a session with its outcome; see ``RobotMemory.get_session``."""
    target = parse_name("session_id", session_id)
    return engine.read(lambda tx: session_to_dict(tx.sessions.get(target)))
