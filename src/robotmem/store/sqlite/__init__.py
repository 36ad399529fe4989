"""The SQLite engine: one file, WAL mode, FTS5 for BM25, vectors as blobs searched in process.

``store.SqliteStore`` implements ``robotmem.store.protocol`` over the modules here, one per table group:
``memories``, ``sessions``, ``vectors``, ``search``, ``browse``, ``transfer``, ``reembedding``,
``maintenance``, ``health``; ``connection`` opens files and retries writes; ``migrations`` holds the
schema; ``mirror`` and ``candidates`` make recall fast; ``access`` writes access counts off the read path.
"""
