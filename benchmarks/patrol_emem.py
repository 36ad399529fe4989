"""The patrol log and queries through eMEM (``pip install emem``, 0.3.x), in eMEM's own environment.

Run by ``benchmarks/patrol.py`` with eMEM's interpreter (the package is never imported into robotmem's):

    /tmp/emem-venv/bin/python benchmarks/patrol_emem.py --log LOG --vectors NPZ --queries JSON --out JSON

Ingest. Every record goes through ``SpatioTemporalMemory.add(text, x, y, z, timestamp, layer_name,
metadata, embedding)`` with the same passage vector robotmem stores (multilingual-e5-small, computed once
by the harness); entity names are embedded from the same table. eMEM makes entities only through an
``LLMClient.extract_entities`` call on flushed observations; here an exact extractor stands in for the LLM:
it names, for each sighting, the object id (entity type ``object_id``) and the label (type ``object``),
nothing for a lesson, so eMEM gets perfect extraction. eMEM gives every entity of an extraction batch the
batch's centroid and latest time, so the runner flushes and extracts after every observation
(``flush_batch_size=1``, ``entity_extract_flush_interval=1``): the most exact setting eMEM has. Merging is
eMEM's own: an extracted name joins an existing entity when their name vectors reach
``entity_similarity_threshold`` (default 0.85) and the entity is within ``entity_spatial_radius`` (5 m),
else an entity with the same name within 5 m, else a new entity. eMEM has no frames: odom positions are
stored as given (the frame stays in ``metadata``, which no query reads).

Queries, each through eMEM's closest store call (``mem.store``, which returns nodes, not tool strings):

    last_seen_id, unknown id   query_entities(name=id, entity_type="object_id"), exact name, newest first
    as_of                      the same entities' observations (OBSERVED_IN edges), latest at or before t
    last_seen_label, unknown   semantic_search_by_vector(query vector, 20): the first entity of type
                               "object", else the first observation
    region_window (sphere)     temporal_query(time_range, spatial_center, spatial_radius, newest first, n)
    region_query (sphere)      semantic_search_by_vector(term vector, n, time_range, spatial centre/radius)
    recent                     temporal_query with eMEM's own parser for "-2h" (tools._parse_relative_time)
    around                     query_entities(near_coordinates, spatial_radius, last_seen_after, object_id)
    box regions                unsupported: eMEM's regions are spheres

``--no-entities`` stores observations only (no extractor, eMEM's default flushing): the object queries are
then not asked, and the build is what eMEM costs without entities.

Each query runs once untimed, then ``--repeat`` times timed (the median is kept); query vectors are
precomputed, so no timing includes a model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


class VectorTable:
    """Precomputed passage and query vectors, looked up by text."""

    def __init__(self, path: Path) -> None:
        data = np.load(path, allow_pickle=False)
        self.passages = {
            str(t): v for t, v in zip(data["passage_texts"], data["passage_vectors"], strict=True)
        }
        self.queries = {str(t): v for t, v in zip(data["query_texts"], data["query_vectors"], strict=True)}
        self.dim = int(data["passage_vectors"].shape[1])


class TableEmbedder:
    """eMEM's ``EmbeddingProvider``: passage vectors from the table; an unknown text is an error."""

    def __init__(self, table: VectorTable) -> None:
        self.table = table

    @property
    def dim(self) -> int:
        return self.table.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table.passages[t] for t in texts]).astype(np.float32)


class ExactExtractor:
    """eMEM's ``LLMClient`` with perfect entity extraction: the entities of the observation being added."""

    def __init__(self) -> None:
        self.current: list[dict[str, Any]] = []

    def summarize(self, texts: list[str]) -> str:
        return " | ".join(texts)

    def synthesize(self, layer_texts: dict[str, list[str]]) -> str:
        return " || ".join(" | ".join(texts) for texts in layer_texts.values())

    def extract_entities(self, texts: list[str]) -> list[dict[str, Any]]:
        return list(self.current)


def open_memory(
    db_dir: Path, table: VectorTable, threshold: float, n_records: int, now: float, entities: bool = True
) -> Any:
    """A fresh eMEM store in ``db_dir`` with the exact extractor and the best extraction settings
    (without ``entities``: no extractor, eMEM's default flushing, observations only)."""
    from emem import SpatioTemporalMemory, SpatioTemporalMemoryConfig

    db_dir.mkdir(parents=True, exist_ok=True)
    for old in db_dir.glob("emem*"):
        old.unlink()
    config = SpatioTemporalMemoryConfig(
        db_path=str(db_dir / "emem.db"),
        hnsw_path=str(db_dir / "emem.hnsw.bin"),
        embedding_dim=table.dim,
        flush_batch_size=1 if entities else 5,
        entity_extract_flush_interval=1 if entities else 10,
        entity_similarity_threshold=threshold,
        hnsw_max_elements=max(10_000, 3 * n_records + 1000),
    )
    extractor = ExactExtractor()
    memory = SpatioTemporalMemory(
        db_path=config.db_path,
        config=config,
        embedding_provider=TableEmbedder(table),
        llm_client=extractor if entities else None,
        get_current_time=lambda: now,
    )
    return memory, extractor


def ingest(memory: Any, extractor: ExactExtractor, log: Any, table: VectorTable) -> dict[str, int]:
    """Add every record in time order; return eMEM observation id -> record index."""
    rows: dict[str, int] = {}
    for index in range(len(log)):
        record = log.record(index)
        entities = []
        if record["object_id"] is not None:
            entities.append({"name": record["object_id"], "entity_type": "object_id", "confidence": 1.0})
        if record["label"] is not None:
            entities.append({"name": record["label"], "entity_type": "object", "confidence": 1.0})
        extractor.current = entities
        x, y, z = record["position"]
        observation_id = memory.add(
            record["text"],
            x=x,
            y=y,
            z=z,
            timestamp=record["observed_at"],
            layer_name="detections" if record["kind"] == "sighting" else "lessons",
            metadata={"frame": record["frame"], "object_id": record["object_id"], "label": record["label"]},
            embedding=table.passages[record["text"]],
        )
        rows[observation_id] = index
    memory.save()
    return rows


class Asker:
    """Runs one query through eMEM's closest call and returns the answer in the harness's shape."""

    def __init__(
        self, memory: Any, table: VectorTable, rows: dict[str, int], now: float, entities: bool
    ) -> None:
        self.store = memory.store
        self.entities = entities
        self.table = table
        self.rows = rows
        self.now = now

    def ask(self, query: dict[str, Any]) -> list[Any] | None:
        kind, args = query["kind"], query["args"]
        if not self.entities and kind in ("last_seen_id", "as_of", "last_seen_label", "unknown", "around"):
            return None  # object queries need entities
        if kind in ("last_seen_id", "as_of") or (kind == "unknown" and "object_id" in args):
            return self.by_id(args["object_id"], args.get("as_of"))
        if kind in ("last_seen_label", "unknown"):
            return self.by_text(args["text"])
        if kind == "around":
            return self.around(args)
        region = args["region"]
        if "center" not in region:
            return None  # eMEM has no box region
        center, radius = np.asarray(region["center"], dtype=np.float64), float(region["radius"])
        if kind == "region_query":
            hits = self.store.semantic_search_by_vector(
                self.table.queries[args["text"]], n_results=args["n"], time_range=(args["since"], args["until"]),
                spatial_center=center, spatial_radius=radius,
            )  # fmt: skip
            return [self.rows[h.id] for h in hits if h.id in self.rows]
        if kind == "recent":
            from emem.tools import _parse_relative_time

            time_range = (_parse_relative_time(args["since"], self.now), self.now)
        else:
            time_range = (args["since"], args["until"])
        found = self.store.temporal_query(
            time_range=time_range, spatial_center=center, spatial_radius=radius, order="newest",
            n_results=args["n"], reference_time=self.now,
        )  # fmt: skip
        return [self.rows[o.id] for o in found]

    def by_id(self, object_id: str, as_of: float | None) -> list[Any]:
        entities = self.store.query_entities(name=object_id, entity_type="object_id", n_results=50)
        exact = [e for e in entities if e.name == object_id]
        if not exact:
            return []
        if as_of is None:
            return [entity_answer(exact[0], object_id=object_id)]
        best = None
        for entity in exact:
            for observation in self.store.get_entity_observations(entity.id):
                if observation.timestamp <= as_of and (
                    best is None or observation.timestamp > best.timestamp
                ):
                    best = observation
        return [] if best is None else [observation_answer(best, object_id)]

    def by_text(self, text: str) -> list[Any]:
        hits = self.store.semantic_search_by_vector(self.table.queries[text], n_results=20)
        for hit in hits:
            if type(hit).__name__ == "EntityNode" and hit.entity_type == "object":
                return [entity_answer(hit, label=hit.name)]
        for hit in hits:
            if type(hit).__name__ == "ObservationNode":
                return [observation_answer(hit, None)]
        return []

    def around(self, args: dict[str, Any]) -> list[Any]:
        entities = self.store.query_entities(
            entity_type="object_id", near_coordinates=np.asarray(args["position"], dtype=np.float64),
            spatial_radius=args["radius"], last_seen_after=args["since"], n_results=args["n"],
        )  # fmt: skip
        centre = np.asarray(args["position"])
        entities.sort(key=lambda e: float(np.linalg.norm(e.coordinates - centre)))
        return [e.name for e in entities]


def entity_answer(entity: Any, object_id: str | None = None, label: str | None = None) -> dict[str, Any]:
    return {
        "object": object_id,
        "label": label,
        "position": [float(v) for v in entity.coordinates],
        "observed_at": float(entity.last_seen),
    }


def observation_answer(observation: Any, object_id: str | None) -> dict[str, Any]:
    return {
        "object": object_id,
        "label": observation.metadata.get("label"),
        "position": [float(v) for v in observation.coordinates],
        "observed_at": float(observation.timestamp),
    }


def reopen_seconds(db_dir: Path, table: VectorTable, threshold: float, n_records: int, now: float) -> float:
    """Time to open the closed store again: HNSW loaded, R-tree rebuilt from SQLite (it is not on disk)."""
    from emem import SpatioTemporalMemory, SpatioTemporalMemoryConfig

    config = SpatioTemporalMemoryConfig(
        db_path=str(db_dir / "emem.db"), hnsw_path=str(db_dir / "emem.hnsw.bin"), embedding_dim=table.dim,
        entity_similarity_threshold=threshold, hnsw_max_elements=max(10_000, 3 * n_records + 1000),
    )  # fmt: skip
    started = time.perf_counter()
    memory = SpatioTemporalMemory(config.db_path, config=config, embedding_provider=TableEmbedder(table))
    elapsed = time.perf_counter() - started
    memory.close()
    return elapsed


def ask_or_fail(asker: Asker, query: dict[str, Any], errors: dict[str, str]) -> list[Any] | None:
    """The answer, or an empty one when eMEM raises (hnswlib cannot always return 5 x n neighbours of a
    graph full of identical caption vectors with ef_search 50); the error is kept for the report."""
    try:
        return asker.ask(query)
    except RuntimeError as error:
        errors[query["id"]] = f"{type(error).__name__}: {error}"
        return []


def store_size(db_dir: Path) -> int:
    return sum(p.stat().st_size for p in db_dir.glob("emem*"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    import emem  # noqa: F401  (fails early, with a clear message, outside eMEM's environment)
    from benchmarks.patrol_data import load_log

    log = load_log(Path(args.log))
    queries = json.loads(Path(args.queries).read_text(encoding="utf-8"))
    table = VectorTable(Path(args.vectors))
    db_dir = Path(args.db_dir)
    started = time.perf_counter()
    entities = not args.no_entities
    memory, extractor = open_memory(db_dir, table, args.threshold, len(log), log.end, entities)
    rows = ingest(memory, extractor, log, table)
    build_s = time.perf_counter() - started
    asker = Asker(memory, table, rows, log.end, entities)
    answers: dict[str, Any] = {}
    ms: dict[str, float] = {}
    errors: dict[str, str] = {}
    for query in queries:
        answers[query["id"]] = ask_or_fail(asker, query, errors)
        samples = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            ask_or_fail(asker, query, errors)
            samples.append((time.perf_counter() - began) * 1000)
        ms[query["id"]] = statistics.median(samples)
    entity_count = memory.store._db.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
    memory.close()
    size = store_size(db_dir)
    reopen_s = reopen_seconds(db_dir, table, args.threshold, len(log), log.end)
    from importlib.metadata import version

    return {
        "system": f"eMEM {version('emem')} "
        + (f"(threshold {args.threshold})" if entities else "(no entities)"),
        "records": len(log),
        "build_s": build_s,
        "size_bytes": size,
        "reopen_s": reopen_s,
        "entities": int(entity_count),
        "errors": errors,
        "answers": answers,
        "ms": ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--db-dir", default="/tmp/patrol-emem")
    parser.add_argument("--threshold", type=float, default=0.85, help="entity_similarity_threshold")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-entities", action="store_true", help="observations only: memory queries alone")
    args = parser.parse_args()
    result = run(args)
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
