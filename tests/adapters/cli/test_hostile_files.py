"""Random bytes and random JSON shapes as every file a command reads, and hostile records for the one
file it writes from the database (``export-mcap``).

Each run is the CLI's ``main()`` in this process: it must end with status 0, or with status 2 and
exactly one ``Error:`` line naming the input (never an internal error, never a traceback); a failed
run leaves no file behind and the database unchanged. A few runs go through real subprocesses.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.integrations.bags import plan_episodes, write_rosbags
from tests.strategies import examples, json_values

from robotmem import RobotMemory
from robotmem.adapters.cli import main
from robotmem.config import Settings

LEROBOT = Path(__file__).parents[2] / "integrations" / "data" / "lerobot_push" / "dataset"
FUZZ = settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    derandomize=True,
)
VALID_MAP: dict[str, Any] = {
    "episodes": {"marker": "/episode", "field": "data", "start": "start", "end": "end"},
    "poses": {"object": "/object_pose", "goal": {"topic": "/goal", "field": "point"}},
    "layout": ["object", "goal"],
    "joints": {"topic": "/joint_states", "samples": 4},
    "outcome": {"topic": "/outcome", "field": "data"},
    "robot": {"id": "arm-01"},
    "task": {"name": "push"},
}

# What a hostile file holds: bytes, JSON of any shape, or text with non-finite numbers.
payloads = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.sampled_from([b"", b"\xff\xfe", b"NaN", b'{"a": Infinity}', b"[" * 5000, b"\x00" * 64]),
)


def mutate(value: Any, rng: random.Random, replacement: Any) -> Any:
    """Return ``value`` with one node somewhere in it replaced by ``replacement``."""
    if isinstance(value, dict) and value and rng.random() < 0.75:
        key = rng.choice(sorted(value))
        return {**value, key: mutate(value[key], rng, replacement)}
    if isinstance(value, list) and value and rng.random() < 0.75:
        index = rng.randrange(len(value))
        return [*value[:index], mutate(value[index], rng, replacement), *value[index + 1 :]]
    return replacement


mutations = st.tuples(
    st.integers(0, 2**32), st.one_of(json_values, st.sampled_from([2**64, -1, 1e308, "", []]))
)


# ---- running the command -----------------------------------------------------------------------------------


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def check_outcome(code: int, err: str) -> None:
    """Status 0, or status 2 with one ``Error:`` line that is not an internal error."""
    assert "Traceback" not in err, err
    assert "internal error" not in err, err
    if code != 0:
        assert code == 2, (code, err)
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: "), err


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory with a database holding one memory; each example works in a copy of it."""
    root = tmp_path_factory.mktemp("hostile")
    with RobotMemory(root / "m.db", settings=Settings(home=root / "home"), embed_backend="hash") as mem:
        mem.learn("grip_force=12 N held the mug on the first try")
    yield root


@contextlib.contextmanager
def scratch(workspace: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=workspace) as raw:
        directory = Path(raw)
        shutil.copy(workspace / "m.db", directory / "m.db")
        yield directory


def common(directory: Path) -> list[str]:
    return ["--db", str(directory / "m.db"), "--embed-backend", "hash"]


def refused_cleanly(directory: Path, argv: list[str]) -> tuple[int, str, str]:
    """Run ``argv``; a failure must leave the directory's files as they were and the database unchanged."""
    before = {p: p.stat().st_size for p in files_under(directory) if not p.name.startswith("m.db")}
    digest = _db_digest(directory / "m.db")
    code, out, err = run(argv)
    check_outcome(code, err)
    if code != 0:
        after = {p: p.stat().st_size for p in files_under(directory) if not p.name.startswith("m.db")}
        assert after == before, sorted(set(after) ^ set(before))
        assert _db_digest(directory / "m.db") == digest
    return code, out, err


def _db_digest(path: Path) -> Any:
    with RobotMemory(path, settings=Settings(home=path.parent / "home"), embed_backend="none") as mem:
        return mem.stats()


# ---- import-lerobot --------------------------------------------------------------------------------------


def _lerobot_copy(directory: Path) -> Path:
    dataset = directory / "dataset"
    shutil.copytree(LEROBOT, dataset)
    return dataset


@given(content=payloads)
@FUZZ
def test_import_lerobot_with_any_info_json(workspace: Path, content: bytes) -> None:
    with scratch(workspace) as directory:
        dataset = _lerobot_copy(directory)
        (dataset / "meta" / "info.json").write_bytes(content)
        code, _, _ = refused_cleanly(
            directory, ["import-lerobot", str(dataset), "--no-progress", *common(directory)]
        )
        assert code == 2


@given(mutation=mutations)
@FUZZ
def test_import_lerobot_with_a_wrongly_shaped_info_json(workspace: Path, mutation: tuple[int, Any]) -> None:
    seed, replacement = mutation
    with scratch(workspace) as directory:
        dataset = _lerobot_copy(directory)
        info = json.loads((dataset / "meta" / "info.json").read_text(encoding="utf-8"))
        changed = mutate(info, random.Random(seed), replacement)
        (dataset / "meta" / "info.json").write_text(json.dumps(changed), encoding="utf-8")
        refused_cleanly(directory, ["import-lerobot", str(dataset), "--no-progress", *common(directory)])


@given(content=payloads, which=st.sampled_from(["meta/episodes", "data"]))
@FUZZ
def test_import_lerobot_with_any_parquet_bytes(workspace: Path, content: bytes, which: str) -> None:
    with scratch(workspace) as directory:
        dataset = _lerobot_copy(directory)
        (dataset / which / "chunk-000" / "file-000.parquet").write_bytes(content)
        code, _, _ = refused_cleanly(
            directory, ["import-lerobot", str(dataset), "--no-progress", *common(directory)]
        )
        assert code == 2


COLUMN_VALUES = st.sampled_from(
    [
        pa.array(["a", "b"] * 60),
        pa.array([[1.0, 2.0], [1.0]] * 60),
        pa.array([None, 1.5] * 60),
        pa.array([[None, 1.0], [1.0, 2.0]] * 60),
        pa.array([True, False] * 60),
        pa.array([[]] * 120, type=pa.list_(pa.float64())),
        pa.array([1e308, -1e308] * 60),
    ]
)


@given(
    column=st.sampled_from(
        ["observation.state", "next.reward", "episode_index", "index", "action", "timestamp"]
    ),
    values=COLUMN_VALUES,
    episodes_column=st.sampled_from([None, "episode_index", "length", "tasks"]),
)
@FUZZ
def test_import_lerobot_with_columns_of_the_wrong_kind(
    workspace: Path, column: str, values: pa.Array, episodes_column: str | None
) -> None:
    with scratch(workspace) as directory:
        dataset = _lerobot_copy(directory)
        data_file = dataset / "data" / "chunk-000" / "file-000.parquet"
        table = pq.read_table(data_file)
        table = table.set_column(table.column_names.index(column), column, values.slice(0, table.num_rows))
        pq.write_table(table, data_file)
        if episodes_column is not None:
            meta_file = dataset / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
            meta = pq.read_table(meta_file)
            swapped = pa.array(["x"] * meta.num_rows)
            meta = meta.set_column(meta.column_names.index(episodes_column), episodes_column, swapped)
            pq.write_table(meta, meta_file)
        refused_cleanly(directory, ["import-lerobot", str(dataset), "--no-progress", *common(directory)])


@given(lines=st.lists(st.one_of(payloads, json_values.map(lambda v: json.dumps(v).encode())), max_size=4))
@FUZZ
def test_import_lerobot_v2_with_any_episodes_jsonl(workspace: Path, lines: list[bytes]) -> None:
    with scratch(workspace) as directory:
        dataset = _lerobot_copy(directory)
        info = json.loads((dataset / "meta" / "info.json").read_text(encoding="utf-8"))
        (dataset / "meta" / "info.json").write_text(json.dumps({**info, "codebase_version": "v2.1"}))
        (dataset / "meta" / "episodes.jsonl").write_bytes(b"\n".join(lines))
        code, _, _ = refused_cleanly(
            directory, ["import-lerobot", str(dataset), "--no-progress", *common(directory)]
        )
        assert code == 2  # no episode_*.parquet frame files: never a complete dataset


# ---- import-bag --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bag(workspace: Path) -> Path:
    return write_rosbags(workspace / "bag", plan_episodes(3), "mcap")


@given(content=payloads, suffix=st.sampled_from([".json", ".toml"]))
@FUZZ
def test_import_bag_with_any_map_file(workspace: Path, bag: Path, content: bytes, suffix: str) -> None:
    with scratch(workspace) as directory:
        map_file = directory / f"map{suffix}"
        map_file.write_bytes(content)
        refused_cleanly(
            directory, ["import-bag", str(bag), "--map", str(map_file), "--no-progress", *common(directory)]
        )


@given(mutation=mutations)
@FUZZ
def test_import_bag_with_a_wrongly_shaped_map(workspace: Path, bag: Path, mutation: tuple[int, Any]) -> None:
    seed, replacement = mutation
    with scratch(workspace) as directory:
        map_file = directory / "map.json"
        map_file.write_text(json.dumps(mutate(VALID_MAP, random.Random(seed), replacement)), encoding="utf-8")
        refused_cleanly(
            directory, ["import-bag", str(bag), "--map", str(map_file), "--no-progress", *common(directory)]
        )


@given(content=payloads, kind=st.sampled_from(["x.mcap", "x.db3", "x.bag", "metadata.yaml"]))
@FUZZ
def test_import_bag_with_any_bag_bytes(workspace: Path, content: bytes, kind: str) -> None:
    with scratch(workspace) as directory:
        if kind == "metadata.yaml":
            target = directory / "bagdir"
            target.mkdir()
            (target / kind).write_bytes(content)
        else:
            target = directory / kind
            target.write_bytes(content)
        argv = [
            "import-bag",
            str(target),
            "--pose",
            "obj=/object_pose",
            "--marker",
            "/episode",
            "--no-progress",
        ]
        code, _, _ = refused_cleanly(directory, [*argv, *common(directory)])
        assert code == 2


@given(offset=st.integers(0, 10_000), content=st.binary(min_size=1, max_size=64))
@FUZZ
def test_import_bag_with_damaged_bytes_in_a_real_bag(
    workspace: Path, bag: Path, offset: int, content: bytes
) -> None:
    with scratch(workspace) as directory:
        damaged = directory / "bag"
        shutil.copytree(bag, damaged)
        (mcap,) = damaged.glob("*.mcap")
        data = bytearray(mcap.read_bytes())
        at = offset % len(data)
        data[at : at + len(content)] = content
        mcap.write_bytes(bytes(data))
        argv = ["import-bag", str(damaged), "--map", _map_file(directory), "--no-progress"]
        refused_cleanly(directory, [*argv, *common(directory)])


def _map_file(directory: Path) -> str:
    path = directory / "map.json"
    path.write_text(json.dumps(VALID_MAP), encoding="utf-8")
    return str(path)


# ---- the other file arguments ------------------------------------------------------------------------------


@given(content=payloads)
@FUZZ
def test_import_eval_and_sync_with_any_file(workspace: Path, content: bytes) -> None:
    with scratch(workspace) as directory:
        given_file = directory / "given.jsonl"
        given_file.write_bytes(content)
        for argv in (
            ["import", str(given_file), "--no-progress"],
            ["eval", str(given_file)],
            ["sync", "--fleet", str(given_file)],
        ):
            refused_cleanly(directory, [*argv, *common(directory)])  # an empty file is an empty set or store


# ---- export-mcap: a file written from hostile records ------------------------------------------------------

STAMPS = st.one_of(
    st.sampled_from([2**64 - 1, 2**63, -1, 0, (2**31) * 10**9, (2**31 - 1) * 10**9 + 999_999_999]),
    st.integers(-(2**70), 2**70),
)
JOINT_DATA = st.fixed_dictionaries(
    {
        "joint_names": st.one_of(st.just(["a", "b"]), json_values),
        "t_ns": st.one_of(st.lists(STAMPS, max_size=3), json_values),
        "positions": st.one_of(st.just([[0.1, 0.2]] * 3), json_values),
    }
)


@given(stamp=STAMPS, data=st.one_of(st.none(), JOINT_DATA), spatial=json_values)
@FUZZ
def test_export_mcap_writes_a_complete_file_or_none(
    workspace: Path, stamp: int, data: dict[str, Any] | None, spatial: Any
) -> None:
    with scratch(workspace) as directory:
        settings = Settings(home=directory / "home")
        with RobotMemory(directory / "m.db", settings=settings, embed_backend="hash") as mem:
            with contextlib.suppress(Exception):  # a context learn refuses is simply not stored
                mem.learn(
                    "pushed the block",
                    context={"provenance": {"t_start_ns": stamp}, "spatial": {"p": spatial}},
                )
            if data is not None:
                with contextlib.suppress(Exception):
                    mem.save_perception("joint trajectory of the push", "procedural", data=data)
        out = directory / "out.mcap"
        code, _, err = refused_cleanly(
            directory, ["export-mcap", str(out), "", "-n", "10", *common(directory)]
        )
        if code == 0:
            _check_mcap(out)
        else:
            assert not out.exists()


def _check_mcap(path: Path) -> None:
    from mcap.reader import make_reader

    with path.open("rb") as stream:
        reader = make_reader(stream)
        assert reader.get_summary() is not None
        assert sum(1 for _ in reader.iter_messages()) >= 1


# ---- real processes ----------------------------------------------------------------------------------------

HOSTILE_RUNS: dict[str, Callable[[Path], list[str]]] = {
    "lerobot info.json of random bytes": lambda d: _lerobot_with(d, b"\x8f\x00{"),
    "lerobot info.json of the wrong shape": lambda d: _lerobot_with(
        d, b'{"codebase_version": 3, "features": []}'
    ),
    "map file of random bytes": lambda d: [
        "import-bag",
        str(d / "x.mcap"),
        "--map",
        _write(d / "m.toml", b"\xff"),
    ],
    "bag of random bytes": lambda d: [
        "import-bag",
        _write(d / "x.mcap", b"\x89MCAP0\r\n" + b"\x00" * 40),
        "--marker",
        "/e",
        "--pose",
        "o=/o",
    ],
    "evaluation file of random bytes": lambda d: ["eval", _write(d / "e.jsonl", b"\xfe\xff\x00")],
}


def _write(path: Path, content: bytes) -> str:
    path.write_bytes(content)
    return str(path)


def _lerobot_with(directory: Path, info: bytes) -> list[str]:
    dataset = _lerobot_copy(directory)
    (dataset / "meta" / "info.json").write_bytes(info)
    return ["import-lerobot", str(dataset), "--no-progress"]


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(HOSTILE_RUNS))
def test_a_real_process_ends_with_one_error_line(tmp_path: Path, case: str) -> None:
    argv = HOSTILE_RUNS[case](tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "robotmem", *argv, "--db", str(tmp_path / "m.db"), "--embed-backend", "hash"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "ROBOTMEM_HOME": str(tmp_path / "home")},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: "), result.stderr
    assert "internal error" not in result.stderr


def test_an_unexpected_exception_is_one_error_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: a bug in a command still ends in one line and status 2, not a traceback."""
    from robotmem.adapters.cli import maintenance

    def broken(args: Any) -> int:
        raise KeyError("columns")

    monkeypatch.setattr(maintenance, "_check", broken)
    monkeypatch.setenv("ROBOTMEM_HOME", str(tmp_path))
    code, out, err = run(["check", "--db", str(tmp_path / "m.db")])
    assert (code, out) == (2, "")
    assert err == (
        "Error: internal error in check (KeyError: 'columns'); please report it with the output of "
        "ROBOTMEM_LOG_LEVEL=debug\n"
    )
