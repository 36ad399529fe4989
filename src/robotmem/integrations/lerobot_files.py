"""Reading a LeRobot dataset's files, checked: ``meta/info.json``, the episodes metadata (v3.0 Parquet,
v2.x JSON Lines) and the columns of the frame files.

Every file is read within a bound and every value checked for its kind before the import uses it; a
refusal is a ``ValidationError`` naming the file and the key or column (``integrations/lerobot.py`` reads
the episodes through these functions).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from robotmem.errors import ValidationError

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "robotmem.integrations.lerobot needs the extra: pip install 'robotmem[lerobot]'"
    ) from exc

Progress = Callable[[str, int, int], None]


MAX_INFO_BYTES = 16 * 1024 * 1024


def read_info(root: Path) -> dict[str, Any]:
    """Return ``meta/info.json``; raises ``ValidationError`` for a missing or malformed file (``check_info``)
    or another layout version."""
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise ValidationError(f"dataset: {root} has no meta/info.json; expected a LeRobot dataset directory")
    info = check_info(_json_file(info_path, MAX_INFO_BYTES), info_path)
    version = info.get("codebase_version", "")
    if not version.startswith(("v3.", "v2.")):
        raise ValidationError(
            f"dataset: {root} is LeRobot {version or 'of unknown version'}; robotmem reads v3.x and v2.x"
        )
    return info


def check_info(info: Any, path: Path) -> dict[str, Any]:
    """Return ``info`` when it has the shape robotmem reads; raises ``ValidationError`` naming the key.

    An object with ``codebase_version`` (text), ``features`` (an object of objects, absent = none),
    ``fps`` (a finite number > 0, or absent / null) and ``robot_type`` (text, or absent / null).
    """
    if not isinstance(info, dict):
        raise ValidationError(f"dataset: {path} must hold a JSON object, got {_kind(info)}")
    version = info.get("codebase_version", "")
    if not isinstance(version, str):
        raise ValidationError(
            f"dataset: {path}: codebase_version must be text such as 'v3.0', got {_kind(version)}"
        )
    features = info.get("features", {})
    if not isinstance(features, dict) or not all(isinstance(v, dict) for v in features.values()):
        raise ValidationError(f"dataset: {path}: features must be an object of feature objects")
    fps = info.get("fps")
    if fps is not None and not (_is_number(fps) and fps > 0):
        raise ValidationError(f"dataset: {path}: fps must be a number above 0, got {fps!r:.40}")
    robot_type = info.get("robot_type")
    if robot_type is not None and not isinstance(robot_type, str):
        raise ValidationError(f"dataset: {path}: robot_type must be text, got {_kind(robot_type)}")
    return info


def check_episode_meta(meta: Mapping[str, list[Any]], where: str) -> None:
    """Raise ``ValidationError`` unless every episode has an ``episode_index`` and ``length`` (integers
    >= 0) and its ``tasks`` (a list of texts, or null); ``where`` names the metadata file(s)."""
    indices, lengths, tasks = (meta.get(k) or [] for k in ("episode_index", "length", "tasks"))
    for row, index in enumerate(indices):
        length = lengths[row] if row < len(lengths) else None
        task = tasks[row] if row < len(tasks) else None
        if not _is_count(index):
            raise ValidationError(
                f"dataset: {where}: episode {row}: episode_index must be an integer >= 0, got {index!r:.40}"
            )
        if not _is_count(length):
            raise ValidationError(
                f"dataset: {where}: episode {index}: length must be an integer >= 0, got {length!r:.40}"
            )
        if task is not None and not (isinstance(task, list) and all(isinstance(t, str) for t in task)):
            raise ValidationError(
                f"dataset: {where}: episode {index}: tasks must be a list of texts, got {task!r:.40}"
            )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _json_file(path: Path, max_bytes: int) -> Any:
    """Return the JSON value of a metadata file; raises ``ValidationError`` naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"dataset: cannot read {path}: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise ValidationError(f"dataset: {path} holds {len(data)} bytes; at most {max_bytes} are read")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise ValidationError(f"dataset: {path} is not UTF-8 text (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"dataset: {path} is not valid JSON ({exc})") from None


def episode_files(root: Path, version: str) -> tuple[dict[str, list[Any]], list[Path]]:
    """Return the per-episode metadata columns and the frame files of either layout."""
    if version.startswith("v2."):
        # v2.x: meta/episodes.jsonl, one parquet file per episode under data/chunk-*/
        source = root / "meta" / "episodes.jsonl"
        if not source.is_file():
            raise ValidationError(f"dataset: {root} (LeRobot {version}) has no meta/episodes.jsonl")
        rows = []
        for number, line in enumerate(_text_lines(source), 1):
            if line.strip():
                row = _json_line(source, number, line)
                rows.append(row)
        meta = {k: [r.get(k) for r in rows] for k in ("episode_index", "tasks", "length")}
        check_episode_meta(meta, str(source))
        return meta, sorted((root / "data").glob("chunk-*/episode_*.parquet"))
    files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    meta = read_table(files, ["episode_index", "tasks", "length"]).to_pydict() if files else {}
    check_episode_meta(meta, f"{root}/meta/episodes")
    return meta, sorted((root / "data").glob("chunk-*/file-*.parquet"))


def _text_lines(path: Path) -> list[str]:
    try:
        return path.read_bytes().decode("utf-8").splitlines()
    except OSError as exc:
        raise ValidationError(f"dataset: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"dataset: {path} is not UTF-8 text (byte {exc.start})") from None


def _json_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        row = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"dataset: {path} line {number} is not valid JSON ({exc})") from None
    if not isinstance(row, dict):
        raise ValidationError(f"dataset: {path} line {number} must be a JSON object, got {_kind(row)}")
    return row


def read_table(files: Sequence[Path], columns: Sequence[str], progress: Progress | None = None) -> pa.Table:
    """Return the named columns (those present) of every file, concatenated; ``progress`` hears each file
    as the ``reading`` stage."""
    tables = []
    for file in files:
        try:
            present = set(pq.read_schema(file).names)
            tables.append(pq.read_table(file, columns=[c for c in columns if c in present]))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise ValidationError(f"dataset: {file} is not a readable Parquet file ({exc})") from None
        if progress is not None:
            progress("reading", 1, len(files))
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowException, ValueError) as exc:
        raise ValidationError(
            f"dataset: the files {files[0]}… do not share their columns' types ({exc})"
        ) from None


def number_matrix(column: pa.ChunkedArray) -> npt.NDArray[np.float64]:
    """Return a column of numbers or of fixed-size number lists as a 2-d float array, one row per frame."""
    array = column.combine_chunks()
    if pa.types.is_fixed_size_list(array.type):
        width = array.type.list_size
        return np.asarray(array.flatten().to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, width)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        return np.asarray(array.to_pylist(), dtype=np.float64).reshape(len(array), -1)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, 1)


def index_column(frames: pa.Table, name: str, root: Path) -> npt.NDArray[np.int64]:
    """Return an integer column of the frame files without gaps; raises ``ValidationError`` naming it."""
    if name not in frames.column_names:
        raise ValidationError(f"dataset: {root}: the data/ files have no {name!r} column")
    column = frames[name]
    if not pa.types.is_integer(column.type) or column.null_count:
        raise ValidationError(
            f"dataset: {root}: the {name!r} column of data/ must hold integers without nulls, got {column.type}"
        )
    return np.asarray(column.to_numpy(), dtype=np.int64)


def number_column(frames: pa.Table, name: str, root: Path) -> npt.NDArray[np.float64]:
    """Return ``_matrix`` of a frame column; raises ``ValidationError`` naming a column that is not
    numbers, or lists of numbers of one length, without nulls."""
    try:
        matrix = number_matrix(frames[name])
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise ValidationError(
            f"dataset: {root}: the {name!r} column of data/ must hold numbers or equal-length lists of "
            f"numbers ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None
    if matrix.shape[0] != frames.num_rows:
        raise ValidationError(f"dataset: {root}: the {name!r} column of data/ has rows of different lengths")
    return matrix
