"""Labelled retrieval evaluation: the JSONL loader and the ranking metrics.

An evaluation file holds documents (memories to store) and queries (with the ids of the documents that answer
them); its format is described in ``benchmarks/data/README.md``. Everything here is pure: no SQLite, no
embedder, no clock. A benchmark stores the documents, runs each query, and hands the ranked document ids to
:func:`score_run`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from robotmem.errors import ValidationError

__all__ = [
    "EvalDocument",
    "EvalQuery",
    "EvalSet",
    "load_eval_set",
    "ndcg_at_k",
    "parse_eval_lines",
    "recall_at_k",
    "reciprocal_rank",
    "score_run",
]

DocumentType = Literal["fact", "perception"]
Language = Literal["en", "zh"]
RecallMode = Literal["any", "all"]

_DOCUMENT_KEYS = frozenset(
    {"kind", "id", "text", "context", "collection", "type", "perception_type", "lang", "session"}
)
_QUERY_KEYS = frozenset(
    {"kind", "id", "query", "gold", "context_filter", "spatial_sort", "collection", "lang", "tags", "split"}
)
_PERCEPTION_TYPES = frozenset({"visual", "tactile", "auditory", "proprioceptive", "procedural"})
CROSS_LINGUAL_TAG = "cross_lingual"


@dataclass(frozen=True, slots=True)
class EvalDocument:
    """One memory to store before the queries run."""

    id: str
    text: str
    context: Mapping[str, Any]
    collection: str | None = None
    type: DocumentType = "fact"
    perception_type: str | None = None
    lang: Language = "en"
    session: str | None = None  # documents with the same label are stored in one session, in file order


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One recall request and the ids of the documents that answer it."""

    id: str
    query: str
    gold: tuple[str, ...]
    context_filter: Mapping[str, Any] | None = None
    spatial_sort: Mapping[str, Any] | None = None
    collection: str | None = None
    lang: Language = "en"
    tags: tuple[str, ...] = ()
    split: str | None = None  # a fixed part of the set, such as "tune" or "heldout"

    @property
    def is_cross_lingual(self) -> bool:
        """True when the query and its gold documents are in different languages."""
        return CROSS_LINGUAL_TAG in self.tags


@dataclass(frozen=True, slots=True)
class EvalSet:
    """Documents and queries of one evaluation file, in file order."""

    documents: tuple[EvalDocument, ...]
    queries: tuple[EvalQuery, ...]

    def document(self, document_id: str) -> EvalDocument:
        """Return the document with that id; raise ``KeyError`` when there is none."""
        for document in self.documents:
            if document.id == document_id:
                return document
        raise KeyError(document_id)


def load_eval_set(path: str | Path) -> EvalSet:
    """Read an evaluation JSONL file.

    Returns the parsed :class:`EvalSet`. Raises ``ValidationError`` naming the line number and the field of
    the first invalid line, or when the file cannot be read.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"evaluation file {str(path)!r} cannot be read: {exc}") from exc
    return parse_eval_lines(text.splitlines())


def parse_eval_lines(lines: Iterable[str]) -> EvalSet:
    """Parse evaluation JSONL lines (blank lines are skipped).

    Returns the :class:`EvalSet`. Raises ``ValidationError`` naming the 1-based line number and the field.
    Besides per-line checks it requires unique document and query ids, and gold ids that name documents.
    """
    documents: list[EvalDocument] = []
    queries: list[EvalQuery] = []
    document_lines: dict[str, int] = {}
    query_lines: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        raw = _parse_json_object(line, number)
        kind = raw.get("kind")
        if kind == "document":
            document = _parse_document(raw, number)
            if document.id in document_lines:
                raise _line_error(
                    number,
                    "id",
                    f"duplicate document id {document.id!r}, first on line {document_lines[document.id]}",
                )
            document_lines[document.id] = number
            documents.append(document)
        elif kind == "query":
            query = _parse_query(raw, number)
            if query.id in query_lines:
                raise _line_error(
                    number, "id", f"duplicate query id {query.id!r}, first on line {query_lines[query.id]}"
                )
            query_lines[query.id] = number
            queries.append(query)
        else:
            raise _line_error(number, "kind", f'expected "document" or "query", got {kind!r}')
    for query in queries:
        for gold_id in query.gold:
            if gold_id not in document_lines:
                raise _line_error(query_lines[query.id], "gold", f"unknown document id {gold_id!r}")
    return EvalSet(documents=tuple(documents), queries=tuple(queries))


def recall_at_k(ranked_ids: Sequence[str], gold: Collection[str], k: int, mode: RecallMode = "any") -> float:
    """Recall of the first ``k`` ranked ids against the gold set.

    ``mode="any"`` returns 1.0 when at least one gold id is in the top ``k`` and 0.0 otherwise (hit rate).
    ``mode="all"`` returns the share of gold ids found in the top ``k``, out of ``min(len(gold), k)`` so that
    a perfect ranking scores 1.0 even when the gold set is larger than ``k``. Repeated ids count once.
    Raises ``ValidationError`` for an empty gold set, ``k < 1`` or an unknown mode.
    """
    gold_set = _gold_set(gold)
    _check_k(k)
    found = len(gold_set.intersection(_dedupe(ranked_ids)[:k]))
    if mode == "any":
        return 1.0 if found else 0.0
    if mode == "all":
        return found / min(len(gold_set), k)
    raise ValidationError(f'mode: expected "any" or "all", got {mode!r}')


def reciprocal_rank(ranked_ids: Sequence[str], gold: Collection[str]) -> float:
    """Return 1 / (1-based rank of the first gold id), or 0.0 when no gold id is ranked.

    Repeated ids count at their first position. Raises ``ValidationError`` for an empty gold set.
    """
    gold_set = _gold_set(gold)
    for position, document_id in enumerate(_dedupe(ranked_ids), start=1):
        if document_id in gold_set:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranked_ids: Sequence[str], gold: Collection[str], k: int = 10) -> float:
    """Normalised discounted cumulative gain of the top ``k`` with binary relevance.

    DCG sums ``1 / log2(rank + 1)`` over gold ids at 1-based ranks up to ``k``; the ideal DCG places
    ``min(len(gold), k)`` gold ids first. Returns a value in [0, 1]. Repeated ids count once.
    Raises ``ValidationError`` for an empty gold set or ``k < 1``.
    """
    gold_set = _gold_set(gold)
    _check_k(k)
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, document_id in enumerate(_dedupe(ranked_ids)[:k], start=1)
        if document_id in gold_set
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def score_run(
    eval_set: EvalSet,
    results: Mapping[str, Sequence[str]],
    ks: Sequence[int] = (1, 5, 10),
    query_ids: Collection[str] | None = None,
) -> dict[str, float]:
    """Mean metrics of one run over the queries of ``eval_set``.

    ``results`` maps a query id to the document ids it returned, best first; a query missing from it counts
    as an empty ranking. ``query_ids`` restricts the means to those queries (a split such as one language).
    Returns ``{"queries", "missing", "mrr", "recall@K", "recall_all@K", "ndcg@K" for each K}`` where
    ``queries`` and ``missing`` are counts and every other value is a mean in [0, 1] (0.0 with no queries).
    Raises ``ValidationError`` when ``results`` or ``query_ids`` name a query the set does not have, or a
    ``k`` is below 1.
    """
    known = {query.id for query in eval_set.queries}
    unknown = sorted((set(results) | set(query_ids or ())) - known)
    if unknown:
        raise ValidationError(f"results: unknown query ids {unknown[:5]}; expected ids of the evaluation set")
    for k in ks:
        _check_k(k)
    selected = [query for query in eval_set.queries if query_ids is None or query.id in query_ids]
    totals: dict[str, float] = {"mrr": 0.0}
    for k in ks:
        totals[f"recall@{k}"] = 0.0
        totals[f"recall_all@{k}"] = 0.0
        totals[f"ndcg@{k}"] = 0.0
    missing = 0
    for query in selected:
        ranked = results.get(query.id)
        if ranked is None:
            missing += 1
            ranked = ()
        totals["mrr"] += reciprocal_rank(ranked, query.gold)
        for k in ks:
            totals[f"recall@{k}"] += recall_at_k(ranked, query.gold, k, mode="any")
            totals[f"recall_all@{k}"] += recall_at_k(ranked, query.gold, k, mode="all")
            totals[f"ndcg@{k}"] += ndcg_at_k(ranked, query.gold, k)
    count = len(selected)
    means = {name: (total / count if count else 0.0) for name, total in totals.items()}
    return {"queries": float(count), "missing": float(missing), **means}


def _dedupe(ranked_ids: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    unique: list[str] = []
    for document_id in ranked_ids:
        if document_id not in seen:
            seen.add(document_id)
            unique.append(document_id)
    return unique


def _gold_set(gold: Collection[str]) -> frozenset[str]:
    gold_set = frozenset(gold)
    if not gold_set:
        raise ValidationError("gold: expected at least one relevant document id")
    return gold_set


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError(f"k: expected an integer >= 1, got {k!r}")


def _line_error(number: int, field: str, detail: str) -> ValidationError:
    return ValidationError(f"line {number}: {field}: {detail}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _parse_json_object(line: str, number: int) -> dict[str, Any]:
    try:
        raw = json.loads(line, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _line_error(number, "json", f"invalid JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError:
        raise _line_error(number, "json", "invalid JSON (nested too deeply)") from None
    except ValueError as exc:
        raise _line_error(number, "json", f"invalid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise _line_error(number, "json", f"expected an object, got {type(raw).__name__}")
    return raw


def _check_keys(raw: Mapping[str, Any], allowed: frozenset[str], number: int) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise _line_error(number, extra[0], f"unknown field; expected one of {sorted(allowed)}")


def _required_text(raw: Mapping[str, Any], field: str, number: int) -> str:
    value = raw.get(field)
    if not isinstance(value, str) or not value.strip():
        raise _line_error(number, field, f"expected a non-empty string, got {value!r}")
    return value


def _optional_text(raw: Mapping[str, Any], field: str, number: int) -> str | None:
    value = raw.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _line_error(number, field, f"expected a non-empty string or null, got {value!r}")
    return value


def _optional_object(raw: Mapping[str, Any], field: str, number: int) -> dict[str, Any] | None:
    value = raw.get(field)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _line_error(number, field, f"expected a JSON object, got {type(value).__name__}")
    return value


def _language(raw: Mapping[str, Any], text: str, number: int) -> Language:
    value = raw.get("lang")
    if value is None:
        return "zh" if any("\u4e00" <= char <= "\u9fff" for char in text) else "en"
    if value == "en":
        return "en"
    if value == "zh":
        return "zh"
    raise _line_error(number, "lang", f'expected "en" or "zh", got {value!r}')


def _parse_document(raw: Mapping[str, Any], number: int) -> EvalDocument:
    _check_keys(raw, _DOCUMENT_KEYS, number)
    document_id = _required_text(raw, "id", number)
    text = _required_text(raw, "text", number)
    context = _optional_object(raw, "context", number) or {}
    document_type = raw.get("type", "fact")
    if document_type not in ("fact", "perception"):
        raise _line_error(number, "type", f'expected "fact" or "perception", got {document_type!r}')
    perception_type = _optional_text(raw, "perception_type", number)
    if perception_type is not None and perception_type not in _PERCEPTION_TYPES:
        raise _line_error(
            number, "perception_type", f"expected one of {sorted(_PERCEPTION_TYPES)}, got {perception_type!r}"
        )
    if perception_type is not None and document_type != "perception":
        raise _line_error(number, "perception_type", 'allowed only with "type": "perception"')
    return EvalDocument(
        id=document_id,
        text=text,
        context=context,
        collection=_optional_text(raw, "collection", number),
        type="perception" if document_type == "perception" else "fact",
        perception_type=perception_type or ("visual" if document_type == "perception" else None),
        lang=_language(raw, text, number),
        session=_optional_text(raw, "session", number),
    )


def _parse_query(raw: Mapping[str, Any], number: int) -> EvalQuery:
    _check_keys(raw, _QUERY_KEYS, number)
    query_id = _required_text(raw, "id", number)
    text = _required_text(raw, "query", number)
    gold = raw.get("gold")
    if not isinstance(gold, list) or not gold or not all(isinstance(item, str) and item for item in gold):
        raise _line_error(number, "gold", f"expected a non-empty list of document ids, got {gold!r}")
    if len(set(gold)) != len(gold):
        raise _line_error(number, "gold", "repeated document id")
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) and tag for tag in tags):
        raise _line_error(number, "tags", f"expected a list of strings, got {tags!r}")
    spatial_sort = _optional_object(raw, "spatial_sort", number)
    if spatial_sort is not None:
        _check_spatial_sort(spatial_sort, number)
    return EvalQuery(
        id=query_id,
        query=text,
        gold=tuple(gold),
        context_filter=_optional_object(raw, "context_filter", number),
        spatial_sort=spatial_sort,
        collection=_optional_text(raw, "collection", number),
        lang=_language(raw, text, number),
        tags=tuple(tags),
        split=_optional_text(raw, "split", number),
    )


def _check_spatial_sort(spatial_sort: Mapping[str, Any], number: int) -> None:
    field = spatial_sort.get("field")
    if not isinstance(field, str) or not field:
        raise _line_error(number, "spatial_sort.field", f"expected a dot-path string, got {field!r}")
    target = spatial_sort.get("target")
    if (
        not isinstance(target, list)
        or not target
        or not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in target)
    ):
        raise _line_error(number, "spatial_sort.target", f"expected a list of numbers, got {target!r}")
    max_distance = spatial_sort.get("max_distance")
    if max_distance is not None and (
        isinstance(max_distance, bool) or not isinstance(max_distance, (int, float)) or max_distance < 0
    ):
        raise _line_error(
            number, "spatial_sort.max_distance", f"expected a number >= 0, got {max_distance!r}"
        )
