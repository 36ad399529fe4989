"""The query-only baseline of relevance: a fixed set of everyday and generic robot-log sentences (English
and Chinese), embedded once per process and model, against which a query's and a memory's cosines are
read (``relevance.Calibration``).

multilingual-e5-small places every pair of texts at cosines 0.7-0.9, and how high depends on the text as
much as on the pair: a Chinese query sits higher against everything, a "hub" memory near every query. The
query's mean cosine to the anchors (embedded as passages) and a memory's to the anchors embedded as
queries measure that offset without asking the store.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from robotmem.query.vectors import FloatArray
from robotmem.store.protocol import VectorQuery

ANCHOR_TEXTS = (
    "The weather was mild and the afternoon passed quietly.",
    "She bought bread and milk at the shop on the corner.",
    "The meeting was moved to Thursday morning.",
    "He read a few pages of the novel before sleeping.",
    "The train arrived ten minutes late.",
    "They painted the kitchen wall a light shade of green.",
    "The children played football in the park.",
    "A letter arrived from an old friend abroad.",
    "The museum opens at nine and closes at five.",
    "Prices went up again this month.",
    "The soup needed a little more salt.",
    "The concert was cancelled because of the storm.",
    "The robot finished its task without errors.",
    "The battery was charged to full before the run.",
    "The arm moved to its home position.",
    "The sensor readings looked normal during the test.",
    "The software was updated to the latest version.",
    "The log shows the run started at noon.",
    "The operator restarted the system after a pause.",
    "Nothing unusual happened during this episode.",
    "The camera was cleaned and mounted again.",
    "A new map of the room was saved.",
    "The task was repeated three times with the same result.",
    "The motor temperature stayed within limits.",
    "今天天气不错，下午很安静。",
    "她在街角的小店买了面包和牛奶。",
    "会议改到了星期四上午。",
    "他睡前读了几页小说。",
    "火车晚到了十分钟。",
    "孩子们在公园里踢足球。",
    "博物馆早上九点开门，下午五点关门。",
    "这个月物价又上涨了。",
    "音乐会因为暴雨取消了。",
    "汤里需要再加一点盐。",
    "机器人顺利完成了任务，没有出错。",
    "运行前电池已经充满。",
    "机械臂回到了初始位置。",
    "测试期间传感器读数正常。",
    "软件已更新到最新版本。",
    "日志显示运行在中午开始。",
    "操作员暂停后重启了系统。",
    "这一轮没有发生任何异常。",
    "摄像头清洁后重新安装。",
    "保存了一张新的房间地图。",
    "同样的任务重复了三次，结果相同。",
    "电机温度一直在正常范围内。",
)

# Embeds texts with the recall's embedder (unit vectors; None for a text the embedder could not embed).
Embed = Callable[[Sequence[str], bool], Sequence[FloatArray | None]]


@dataclass(frozen=True, slots=True)
class Anchors:
    """The means of the anchors' unit vectors, embedded as passages and as queries, for one model."""

    passages: FloatArray
    queries: FloatArray

    def of_query(self, vector: FloatArray) -> float:
        """The query's mean cosine to the anchors."""
        return float(np.dot(self.passages, np.asarray(vector, dtype=np.float32)))

    def hub_query(self, like: VectorQuery) -> tuple[VectorQuery, float]:
        """A unit query for the anchors' mean (embedded as queries) and its length: a memory's cosine to it
        times the length is the memory's mean cosine to the anchor queries."""
        norm = float(np.linalg.norm(self.queries))
        return VectorQuery(self.queries / norm, like.model_id, like.dim), norm


SHIPPED = "anchor_means.json"

_cache: dict[str, Anchors | None] = {}
_lock = threading.Lock()


def anchors_for(model_id: str, embed: Embed) -> Anchors | None:
    """The anchors of ``model_id``: shipped, or embedded on first use (None when the embedder leaves any
    out)."""
    with _lock:
        if model_id not in _cache:
            found = shipped_anchors().get(model_id)
            _cache[model_id] = found if found is not None else embedded_anchors(embed)
        return _cache[model_id]


def texts_digest() -> str:
    """The SHA-256 of the anchor texts: shipped means count only for the texts they were embedded from."""
    return hashlib.sha256("\n".join(ANCHOR_TEXTS).encode("utf-8")).hexdigest()


def shipped_anchors() -> dict[str, Anchors]:
    """Model id → the anchors shipped for it (``SHIPPED``) that belong to the current texts."""
    text = resources.files(__package__ or "robotmem.service.recall").joinpath(SHIPPED).read_text("utf-8")
    digest = texts_digest()
    return {
        model_id: Anchors(
            passages=np.asarray(entry["passages"], dtype=np.float32),
            queries=np.asarray(entry["queries"], dtype=np.float32),
        )
        for model_id, entry in json.loads(text).items()
        if entry.get("texts_sha256") == digest
    }


def shipped_entry(anchors: Anchors) -> dict[str, Any]:
    """The ``SHIPPED`` entry of ``anchors`` (for the model they were embedded with)."""
    return {
        "texts_sha256": texts_digest(),
        "passages": [round(float(v), 7) for v in anchors.passages],
        "queries": [round(float(v), 7) for v in anchors.queries],
    }


def embedded_anchors(embed: Embed) -> Anchors | None:
    """The anchors embedded with ``embed`` (None when it leaves any text out)."""
    means = []
    for is_query in (False, True):
        vectors = list(embed(ANCHOR_TEXTS, is_query))
        if len(vectors) != len(ANCHOR_TEXTS) or any(v is None for v in vectors):
            return None
        means.append(np.mean(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]), axis=0))
    return Anchors(passages=means[0].astype(np.float32), queries=means[1].astype(np.float32))
