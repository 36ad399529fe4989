"""Settings: defaults, ``$ROBOTMEM_HOME/config.toml``, then ``ROBOTMEM_<KEY>`` environment overrides.

``load_settings`` runs only at entry points (adapters, a bare ``RobotMemory()``); nothing here reads
the environment on import.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from robotmem.errors import ValidationError
from robotmem.records import Memory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

CONFIG_FILE_NAME = "config.toml"
FUSION_METHODS = ("rrf", "zscore", "minmax")
EMBED_BACKENDS = ("auto", "bundled", "onnx", "ollama", "openai", "hash", "none")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclasses.dataclass(frozen=True, slots=True)
class RecallSettings:
    """How recall ranks. Each field is a setting of its own name (config file key, ``ROBOTMEM_<KEY>``);
    the defaults are what every user runs (docs/benchmarks.md, "Ranking techniques": chosen on the tuning
    splits of the episode set and the robot set, confirmed on their held-out splits)."""

    # rrf | zscore | minmax: rank fusion, or normalised scores weighted per channel
    fusion: str = "minmax"
    rrf_k: int = 1  # chosen on the evaluation set (docs/benchmarks.md): 0.76 recall@5 against 0.61 at 60
    bm25_weight: float = 1.0
    # 0.5 and a coverage of 0.1: chosen on LoCoMo's tuning conversations, confirmed on its checking ones
    # and on both labelled sets' recall@5 (docs/benchmarks.md, "LoCoMo development half").
    vector_weight: float = 0.5
    candidate_depth: int = 50  # candidates each channel gives (at least n)
    # In hybrid recall, a BM25 match must cover this share of the query's IDF mass (docs/benchmarks.md).
    bm25_min_coverage: float = 0.1
    bm25_k1: float = 0.6  # BM25 term-frequency saturation (FTS5's own bm25() uses 1.2)
    bm25_b: float = 0.1  # BM25 length normalisation (FTS5: 0.75); short lessons want little
    query_stopwords: str = "basic"  # basic | extended: words dropped from the BM25 query
    neighbour_share: float = 0.25  # a memory gains this share of its episode neighbours' scores
    neighbour_span: int = 1  # how many places before and after a memory in its episode count as neighbours
    # A context path whose value groups the memories learned without a session into episodes (e.g.
    # "session" for a conversation stored turn by turn); "" = only sessions are episodes.
    episode_field: str = ""
    # A query naming a day or a month ("on 14 March, 2024", "in May 2024"): candidates dated within it
    # (their context's "date", else created_at) gain this share of the best score.
    date_boost: float = 1.0
    episode_share: float = 0.1  # a memory gains this share of its episode's best score
    context_boost: float = 1.0  # gain (× best score × rarity) for carrying context values the query names
    # A query asking for the step after (before) the one it describes: this share of each memory's score
    # passes to the next (previous) memory of its episode.
    direction_share: float = 0.8
    # Weight in fusion of a third channel: each memory's text after its predecessor's in the session,
    # embedded together; above 0 learn also embeds that (one more passage embedding). Off: it did not
    # help beside episode structure (docs/benchmarks.md).
    episode_vector_weight: float = 0.0
    real_world_boost: float = 1.5  # score factor of memories whose context says env.sim_or_real = "real"
    # Recall score factor of the robot's own memories among the fleet's (docs/fleet.md, measured there).
    own_robot_boost: float = 1.2


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of robotmem. Field names are the config-file keys and, upper-cased, the env suffix."""

    home: Path = Path("~/.robotmem").expanduser()
    db_path: Path | None = None  # default: home / "memory.db"
    collection: str = "default"
    # Embedding
    embed_backend: str = "auto"  # auto = bundled model if installed, else none
    embed_model: str = ""  # backend-specific model name; "" = the backend's default
    embed_dim: int = 0  # 0 = ask the backend
    embed_timeout_s: float = 10.0
    ollama_url: str = "http://127.0.0.1:11434"
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str = ""
    onnx_model_dir: str = ""
    # Search
    top_k: int = 5
    min_confidence: float = 0.3
    # Recall from the in-process mirror (docs/architecture.md); false = every channel queries SQLite
    # (no build time or memory — about 190 MB at 100k memories — but 5-10x slower recall).
    recall_mirror: bool = True
    # How recall ranks: the fields of RecallSettings, each a setting of its own name (rrf_k, fusion, ...).
    recall: RecallSettings = dataclasses.field(default_factory=RecallSettings)
    # Optional cross-encoder reranking of recall's best candidates over HTTP (POST {rerank_url}/rerank);
    # "" = off. On a failure or timeout recall keeps its own order.
    rerank_url: str = ""
    rerank_model: str = ""
    rerank_api_key: str = ""
    rerank_timeout_s: float = 2.0
    rerank_depth: int = 20  # candidates sent to the reranker
    # Dedup, consolidation and decay
    dedup_jaccard: float = 0.70
    dedup_cosine: float = 0.985
    consolidation_jaccard: float = 0.50
    decay_rate: float = 0.01
    related_top_k: int = 5
    # Objects that persist (docs/where-and-when.md): sightings of one label without an id whose positions
    # (same frame) lie within this distance of the group's latest are one object. 1 m: a cup nudged on a
    # table stays one cup, two cones a few metres apart stay two.
    object_group_radius: float = 1.0
    # Limits
    max_insight_chars: int = 300
    max_description_chars: int = 2000
    max_context_bytes: int = 65536
    max_data_bytes: int = 4 * 1024 * 1024
    max_metadata_bytes: int = 65536
    max_filter_bytes: int = 16384
    max_n: int = 100
    # Fleet (docs/fleet.md)
    # "" = the id stored in the database file when it was created (host name + store id): unique per
    # file even when simulated robots share a host, and unchanged when the host is renamed.
    robot_id: str = ""
    # Storage
    # A PostgreSQL store (docs/fleet.md): postgresql://user@host:port/dbname; "" = the SQLite file above.
    database_url: str = ""
    busy_timeout_ms: int = 5000
    write_retries: int = 8
    log_level: str = "WARNING"
    # Web server (robotmem web)
    web_token: str = ""  # required on writes when set; required to bind beyond loopback
    # Host headers accepted besides the loopback names and the bind host (comma-separated); a rebinding
    # DNS name pointing at this machine then gets 400 instead of the memories.
    web_allowed_hosts: str = ""
    # Connections waitress keeps at once (its default, 100, lets idle clients lock everyone out).
    web_connection_limit: int = 500
    # A connection idle this long, or a request not fully received this long, is closed.
    web_channel_timeout_s: int = 30

    @property
    def database(self) -> Path:
        """The SQLite file these settings point at."""
        return self.db_path if self.db_path is not None else self.home / "memory.db"

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with ``changes`` (setting keys, recall's among them) applied, converted and checked."""
        merged = setting_values(self)
        for key, value in changes.items():
            if value is None:
                continue
            merged[key] = _convert(key, value, source="argument")
        return _checked(_settings(merged))


_RECALL_KEYS = tuple(f.name for f in dataclasses.fields(RecallSettings))
# Every setting key, in the order of the fields (recall's where ``Settings.recall`` stands).
SETTING_KEYS = tuple(
    key for f in dataclasses.fields(Settings) for key in (_RECALL_KEYS if f.name == "recall" else (f.name,))
)
_DEFAULTS = Settings()
# A memory's own fields, which a context path may not name (a filter would read the record instead).
_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(Memory))


def setting_value(settings: Settings, key: str) -> Any:
    """Return the value of the setting ``key`` (a key of ``SETTING_KEYS``)."""
    return getattr(settings.recall if key in _RECALL_KEYS else settings, key)


def setting_values(settings: Settings) -> dict[str, Any]:
    """Return every setting of ``settings`` by key."""
    return {key: setting_value(settings, key) for key in SETTING_KEYS}


def _settings(values: dict[str, Any]) -> Settings:
    """``Settings`` from values by setting key (recall's go into its ``RecallSettings``)."""
    recall = RecallSettings(**{k: v for k, v in values.items() if k in _RECALL_KEYS})
    return Settings(**{k: v for k, v in values.items() if k not in _RECALL_KEYS}, recall=recall)


# Settings that name a file or directory, with what they accept (an empty value is refused).
_PATH_SETTINGS = {
    "home": "a directory path (leave ROBOTMEM_HOME unset for ~/.robotmem)",
    "db_path": "a database file path (leave it unset for <home>/memory.db)",
}


def _convert(key: str, raw: Any, *, source: str) -> Any:
    if key not in SETTING_KEYS:
        raise ValidationError(
            f"{source}: unknown setting {key!r}; known settings: {', '.join(sorted(SETTING_KEYS))}"
        )
    default = setting_value(_DEFAULTS, key)
    if key in _PATH_SETTINGS and isinstance(raw, (str, os.PathLike)) and not str(raw).strip():
        # Path("") is "." (the working directory): an empty path is a mistake, not a location.
        raise ValidationError(f"{source}: setting {key!r} is {str(raw)!r}; accepted: {_PATH_SETTINGS[key]}")
    try:
        if key in _PATH_SETTINGS:
            return Path(str(raw)).expanduser()
        if isinstance(default, bool):
            return _boolean(key, raw, source)
        if isinstance(raw, bool):  # TOML true for a number: int(True) would pass silently
            raise TypeError
        if isinstance(default, int):
            if isinstance(raw, float):  # 1.5 must not become 1
                raise TypeError
            return int(raw.strip() if isinstance(raw, str) else raw)
        if isinstance(default, float):
            return float(raw)
        if not isinstance(raw, str) and source != "argument":
            raise TypeError
        return str(raw)
    except (TypeError, ValueError, OverflowError):
        expected = {int: "an integer", float: "a number"}.get(type(default), "a string")
        raise ValidationError(f"{source}: setting {key!r} must be {expected}, got {raw!r}") from None


def _boolean(key: str, raw: Any, source: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValidationError(
        f"{source}: setting {key!r} must be true or false (also 1/0, yes/no, on/off), got {raw!r}"
    )


# Accepted ranges: (low, high) inclusive; None = unbounded. Every number must also be finite.
_FLOAT_RANGES: dict[str, tuple[float, float | None, str]] = {
    "embed_timeout_s": (0.001, 3600.0, "0.001..3600 seconds"),
    "min_confidence": (0.0, 1.0, "0..1"),
    "real_world_boost": (0.0, 1000.0, "0..1000"),
    "own_robot_boost": (0.001, 10.0, "0.001..10"),
    "bm25_weight": (0.0, 1000.0, "0..1000"),
    "vector_weight": (0.0, 1000.0, "0..1000"),
    "bm25_min_coverage": (0.0, 1.0, "0..1"),
    "dedup_jaccard": (0.0, 2.0, "0..2 (above 1 turns the check off)"),
    "dedup_cosine": (0.0, 2.0, "0..2 (above 1 turns the check off)"),
    "consolidation_jaccard": (0.0, 2.0, "0..2 (above 1 turns the check off)"),
    "decay_rate": (0.0, 1.0, "0..1"),
    "object_group_radius": (0.0, 1_000_000.0, "0..1000000 (the frame's units, metres)"),
    "rerank_timeout_s": (0.001, 600.0, "0.001..600 seconds"),
    "bm25_k1": (0.0, 10.0, "0..10"),
    "bm25_b": (0.0, 1.0, "0..1"),
    "neighbour_share": (0.0, 10.0, "0..10"),
    "episode_share": (0.0, 10.0, "0..10"),
    "context_boost": (0.0, 1.0, "0..1"),
    "direction_share": (0.0, 1.0, "0..1"),
    "episode_vector_weight": (0.0, 1000.0, "0..1000"),
    "date_boost": (0.0, 10.0, "0..10"),
}
_INT_RANGES: dict[str, tuple[int, int]] = {
    "embed_dim": (0, 65536),
    "top_k": (1, 10_000),
    "rrf_k": (0, 1_000_000),
    "candidate_depth": (1, 100_000),
    "related_top_k": (0, 1000),
    "max_insight_chars": (1, 1_000_000),
    "max_description_chars": (1, 10_000_000),
    "max_context_bytes": (2, 1 << 30),
    "max_data_bytes": (2, 1 << 30),
    "max_metadata_bytes": (2, 1 << 30),
    "max_filter_bytes": (2, 1 << 24),
    "max_n": (1, 10_000),
    "busy_timeout_ms": (0, 3_600_000),
    "write_retries": (0, 1000),
    "web_connection_limit": (1, 100_000),
    "web_channel_timeout_s": (1, 86_400),
    "rerank_depth": (1, 100),
    "neighbour_span": (1, 10),
}
_URL_SETTINGS = ("ollama_url", "openai_base_url")
_OPTIONAL_URL_SETTINGS = ("rerank_url",)  # empty = off


class SettingRangeError(ValidationError):
    """A setting's value is outside its accepted range; ``setting`` names it."""

    def __init__(self, setting: str, shown: str, accepted: str, related: tuple[str, ...] = ()) -> None:
        super().__init__(f"setting {setting!r} is {shown}; accepted: {accepted}")
        self.setting = setting
        self.related = related  # settings whose values make the range (top_k's range is max_n)


def _out_of_range(key: str, value: Any, accepted: str) -> SettingRangeError:
    return SettingRangeError(key, repr(value), accepted)


# Settings that travel in an HTTP header, and what each may hold: a client sends the web token (a browser
# carries Latin-1 there), robotmem's own HTTP client sends the API keys, and it encodes headers as ASCII.
_HEADER_SETTINGS = {"web_token": "latin-1", "openai_api_key": "ascii", "rerank_api_key": "ascii"}
_CHARSET_NAMES = {"latin-1": "Latin-1, U+0000..U+00FF", "ascii": "ASCII"}


def header_value_problem(value: str, charset: str = "latin-1") -> str | None:
    """Return why ``value`` cannot be sent as an HTTP header value in ``charset``, or None when it can."""
    try:
        value.encode(charset)
    except UnicodeEncodeError as exc:
        return f"character {exc.start + 1} is outside {_CHARSET_NAMES[charset]}"
    return None


def check_ranges(settings: Settings) -> None:
    """Raise ``ValidationError`` naming the setting, its value and the accepted range for any value out of range."""
    for key, (low, high, accepted) in _FLOAT_RANGES.items():
        value = setting_value(settings, key)
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            raise _out_of_range(key, value, f"a finite number within {accepted}")
    for key, (low_int, high_int) in _INT_RANGES.items():
        value = setting_value(settings, key)
        if not low_int <= value <= high_int:
            raise _out_of_range(key, value, f"an integer within {low_int}..{high_int}")
    for key in _PATH_SETTINGS:
        path = setting_value(settings, key)
        if path is not None and "\x00" in str(path):
            raise _out_of_range(key, str(path), "a file system path without NUL characters")
    name = settings.collection
    if not name.strip() or name != name.strip() or len(name) > 200 or not name.isprintable():
        raise _out_of_range(
            "collection", name, "1..200 printable characters without surrounding spaces or line breaks"
        )
    for key in _URL_SETTINGS + _OPTIONAL_URL_SETTINGS:
        url = setting_value(settings, key)
        if key in _OPTIONAL_URL_SETTINGS and not url:
            continue
        if not url.startswith(("http://", "https://")) or not url.isprintable() or " " in url:
            raise _out_of_range(key, url, "an http:// or https:// URL")
    for key in (
        "web_token",
        "openai_api_key",
        "embed_model",
        "onnx_model_dir",
        "rerank_model",
        "rerank_api_key",
    ):
        value = setting_value(settings, key)
        if value != value.strip() or not value.isprintable():
            secret = key in ("web_token", "openai_api_key", "rerank_api_key")
            raise SettingRangeError(
                key,
                "(hidden)" if secret else repr(value),
                "text without surrounding spaces, line breaks or control characters",
            )
    for key, charset in _HEADER_SETTINGS.items():
        if header_value_problem(getattr(settings, key), charset) is not None:
            raise SettingRangeError(
                key, "(hidden)", f"characters an HTTP header can carry ({_CHARSET_NAMES[charset]})"
            )
    for host in web_allowed_hosts(settings):
        if not host or not host.isprintable() or any(ch in host for ch in " /@\\"):
            raise _out_of_range(
                "web_allowed_hosts",
                settings.web_allowed_hosts,
                "comma-separated host names, e.g. robot.lan,10.0.0.5",
            )


def web_allowed_hosts(settings: Settings) -> list[str]:
    """Return the extra Host names of ``web_allowed_hosts`` (lower-case, without spaces)."""
    if not settings.web_allowed_hosts.strip():
        return []
    return [host.strip().lower() for host in settings.web_allowed_hosts.split(",")]


def _redacted(dsn: str) -> str:
    """``dsn`` without a password, for messages."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)


def _checked(settings: Settings) -> Settings:
    check_ranges(settings)
    if settings.embed_backend not in EMBED_BACKENDS:
        raise _out_of_range("embed_backend", settings.embed_backend, f"one of {', '.join(EMBED_BACKENDS)}")
    if settings.recall.fusion not in FUSION_METHODS:
        raise _out_of_range("fusion", settings.recall.fusion, f"one of {', '.join(FUSION_METHODS)}")
    if settings.recall.episode_field and not _is_context_path(settings.recall.episode_field):
        raise _out_of_range(
            "episode_field",
            settings.recall.episode_field,
            "empty, or a dot-separated context path such as session or task.episode (not a record field)",
        )
    if settings.recall.query_stopwords not in ("basic", "extended"):
        raise _out_of_range("query_stopwords", settings.recall.query_stopwords, "basic or extended")
    if not 1 <= settings.top_k <= settings.max_n:
        raise SettingRangeError(
            "top_k", repr(settings.top_k), f"an integer within 1..max_n ({settings.max_n})", ("max_n",)
        )
    if len(settings.robot_id) > 200 or any(
        not ch.isprintable() or ch.isspace() or ch == "," for ch in settings.robot_id
    ):
        raise _out_of_range(
            "robot_id", settings.robot_id, "at most 200 printable characters without spaces or commas"
        )
    if settings.database_url and not settings.database_url.startswith(("postgresql://", "postgres://")):
        raise _out_of_range(
            "database_url",
            _redacted(settings.database_url),
            "a postgresql://user@host:port/dbname address or empty",
        )
    if settings.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise _out_of_range("log_level", settings.log_level, "one of DEBUG INFO WARNING ERROR CRITICAL")
    return settings


def _is_context_path(path: str) -> bool:
    """Whether ``path`` names a key of a memory's context: dot-separated keys without quotes or surrounding
    spaces, neither a record field (``id``, ``session_id``, ``created_at``, ...) nor under ``context.``."""
    keys = path.split(".")
    plain = all(key and key.isprintable() and '"' not in key and key.strip() == key for key in keys)
    return plain and not (len(keys) == 1 and keys[0] in _RECORD_FIELDS) and keys[0] != "context"


def load_settings(env: Mapping[str, str], path: Path | None = None) -> Settings:
    """Build settings from defaults, the config file and ``ROBOTMEM_*`` variables in ``env``.

    ``path`` overrides the config file location (default ``$ROBOTMEM_HOME/config.toml``).
    Raises ``ValidationError`` for an unknown key or a value of the wrong type.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}  # setting → where its value came from, for error messages
    home_raw = env.get("ROBOTMEM_HOME")
    home = (
        Settings().home
        if home_raw is None
        else _convert("home", home_raw, source="environment variable ROBOTMEM_HOME")
    )
    values["home"] = home
    config_path = path if path is not None else home / CONFIG_FILE_NAME
    if config_path.is_file():
        try:
            data = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ValidationError(f"config file {config_path}: cannot be read as TOML ({exc})") from None
        for key, raw in data.items():
            values[key] = _convert(key, raw, source=f"config file {config_path}")
            sources[key] = f"config file {config_path}"
    for name, raw in env.items():
        if not name.startswith("ROBOTMEM_") or name == "ROBOTMEM_HOME":
            continue
        key = name[len("ROBOTMEM_") :].lower()
        if key in SETTING_KEYS:
            values[key] = _convert(key, raw, source=f"environment variable {name}")
            sources[key] = f"environment variable {name}"
    if "home" in values and "db_path" not in values:
        values["db_path"] = None
    try:
        return _checked(_settings(values))
    except SettingRangeError as exc:
        source = next((sources[k] for k in (exc.setting, *exc.related) if k in sources), None)
        if source is None:
            raise
        raise ValidationError(f"{source}: {exc.message}") from None
