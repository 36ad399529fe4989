"""The service: ``RobotMemory`` (the facade every surface calls) and the feature modules behind it.

facade.py      RobotMemory — the table of contents of the API, one-line delegations
engine.py      Engine — store, settings, clock, embedder, the current session
operations.py  which feature function runs each operation's input model (RobotMemory.run)
memories.py    learn, update, forget, get_memory (dedup on learn)
perceptions.py save_perception, save_perceptions
objects.py     last_seen, around: objects that persist, tracked across their sightings
sessions.py    start_session, end_session (consolidation, decay, related memories), get_session
browse.py      read-only views for dashboards and the web UI; episodes with robot, task and outcome
charts.py      the web UI's map and parameters against outcome
bins.py        the bins and Wilson intervals of the parameters view (pure)
maintenance.py doctor, integrity_report, repair, backup
files.py       where backup and export may write: the guard of the live database and existing files
transfer.py    export and import as JSON Lines
sync.py        robotmem sync: changes exchanged with a fleet store, incrementally and idempotently
backfill.py    vectors for memories without one, re-embedding, the background backfill thread
recall/        the recall pipeline over the store's candidate channels: plan, pipeline, relevance,
               scoring (fusion, episode structure, named values), rerank
"""

from robotmem.service.facade import RobotMemory

__all__ = ["RobotMemory"]
