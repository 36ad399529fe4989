"""Settings: defaults, ``$ROBOTMEM_HOME/config.toml``, then ``ROBOTMEM_<KEY>`` environment overrides.

``load_settings`` runs only at entry points (adapters, a bare ``RobotMemory()``); nothing here reads
the environment on import.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from robotmem.errors import ValidationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

CONFIG_FILE_NAME = "config.toml"
EMBED_BACKENDS = ("auto", "bundled", "onnx", "ollama", "openai", "hash", "none")


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
    rrf_k: int = 1  # chosen on the evaluation set (docs/benchmarks.md): 0.76 recall@5 against 0.61 at 60
    min_confidence: float = 0.3
    real_world_boost: float = 1.5
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    candidate_depth: int = 50
    # In hybrid recall, a BM25 match must cover this share of the query's IDF mass (docs/benchmarks.md).
    bm25_min_coverage: float = 0.3
    # Recall from the in-process mirror (docs/architecture.md); false = every channel queries SQLite
    # (no build time or memory — about 190 MB at 100k memories — but 5-10x slower recall).
    recall_mirror: bool = True
    # Dedup, consolidation and decay
    dedup_jaccard: float = 0.70
    dedup_cosine: float = 0.985
    consolidation_jaccard: float = 0.50
    decay_rate: float = 0.01
    related_top_k: int = 5
    # Limits
    max_insight_chars: int = 300
    max_description_chars: int = 2000
    max_context_bytes: int = 65536
    max_data_bytes: int = 4 * 1024 * 1024
    max_metadata_bytes: int = 65536
    max_filter_bytes: int = 16384
    max_n: int = 100
    # Storage
    busy_timeout_ms: int = 5000
    write_retries: int = 8
    log_level: str = "WARNING"

    @property
    def database(self) -> Path:
        """The SQLite file these settings point at."""
        return self.db_path if self.db_path is not None else self.home / "memory.db"

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with ``changes`` applied (values are converted and checked)."""
        merged = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for key, value in changes.items():
            if value is None:
                continue
            merged[key] = _convert(key, value, source="argument")
        return _checked(Settings(**merged))


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}


def _convert(key: str, raw: Any, *, source: str) -> Any:
    if key not in _FIELDS:
        raise ValidationError(
            f"{source}: unknown setting {key!r}; known settings: {', '.join(sorted(_FIELDS))}"
        )
    default = getattr(Settings(), key)
    try:
        if key in ("home", "db_path"):
            return Path(str(raw)).expanduser()
        if isinstance(default, bool):
            return str(raw).strip().lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        return str(raw)
    except (TypeError, ValueError):
        expected = type(default).__name__
        raise ValidationError(f"{source}: setting {key!r} must be a {expected}, got {raw!r}") from None


def _checked(settings: Settings) -> Settings:
    if settings.embed_backend not in EMBED_BACKENDS:
        raise ValidationError(
            f"embed_backend: {settings.embed_backend!r} is not a backend; expected one of {', '.join(EMBED_BACKENDS)}"
        )
    if settings.rrf_k < 0:
        raise ValidationError(f"rrf_k must be >= 0, got {settings.rrf_k}")
    if not 0.0 <= settings.bm25_min_coverage <= 1.0:
        raise ValidationError(f"bm25_min_coverage must be within 0..1, got {settings.bm25_min_coverage}")
    if not 0.0 <= settings.min_confidence <= 1.0:
        raise ValidationError(f"min_confidence must be within 0..1, got {settings.min_confidence}")
    if not 1 <= settings.top_k <= settings.max_n:
        raise ValidationError(f"top_k must be within 1..{settings.max_n}, got {settings.top_k}")
    if settings.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ValidationError(
            f"log_level must be one of DEBUG INFO WARNING ERROR CRITICAL, got {settings.log_level!r}"
        )
    return settings


def load_settings(env: Mapping[str, str], path: Path | None = None) -> Settings:
    """Build settings from defaults, the config file and ``ROBOTMEM_*`` variables in ``env``.

    ``path`` overrides the config file location (default ``$ROBOTMEM_HOME/config.toml``).
    Raises ``ValidationError`` for an unknown key or a value of the wrong type.
    """
    values: dict[str, Any] = {}
    home_raw = env.get("ROBOTMEM_HOME")
    home = Path(home_raw).expanduser() if home_raw else Settings().home
    values["home"] = home
    config_path = path if path is not None else home / CONFIG_FILE_NAME
    if config_path.is_file():
        try:
            data = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValidationError(f"config file {config_path}: cannot be read as TOML ({exc})") from None
        for key, raw in data.items():
            values[key] = _convert(key, raw, source=f"config file {config_path}")
    for name, raw in env.items():
        if not name.startswith("ROBOTMEM_") or name == "ROBOTMEM_HOME":
            continue
        key = name[len("ROBOTMEM_") :].lower()
        if key in _FIELDS:
            values[key] = _convert(key, raw, source=f"environment variable {name}")
    if "home" in values and "db_path" not in values:
        values["db_path"] = None
    return _checked(Settings(**values))
