"""Settings are range-checked when loaded: a bad value is one ValidationError naming it, never a later crash."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.strategies import examples

from robotmem import RobotMemory
from robotmem.config import Settings, load_settings, web_allowed_hosts
from robotmem.errors import ValidationError

BAD_VALUES = [
    ("ROBOTMEM_DEDUP_JACCARD", "nan", "dedup_jaccard"),
    ("ROBOTMEM_DEDUP_COSINE", "inf", "dedup_cosine"),
    ("ROBOTMEM_MIN_CONFIDENCE", "-0.1", "min_confidence"),
    ("ROBOTMEM_DECAY_RATE", "1e400", "decay_rate"),
    ("ROBOTMEM_OBJECT_GROUP_RADIUS", "-0.5", "object_group_radius"),
    ("ROBOTMEM_OBJECT_GROUP_RADIUS", "nan", "object_group_radius"),
    ("ROBOTMEM_EMBED_TIMEOUT_S", "0", "embed_timeout_s"),
    ("ROBOTMEM_WRITE_RETRIES", "-1", "write_retries"),
    ("ROBOTMEM_MAX_INSIGHT_CHARS", "0", "max_insight_chars"),
    ("ROBOTMEM_EMBED_DIM", "-3", "embed_dim"),
    ("ROBOTMEM_CANDIDATE_DEPTH", "0", "candidate_depth"),
    ("ROBOTMEM_TOP_K", "1.5", "top_k"),
    ("ROBOTMEM_TOP_K", "500", "top_k"),
    ("ROBOTMEM_RECALL_MIRROR", "maybe", "recall_mirror"),
    ("ROBOTMEM_COLLECTION", "", "collection"),
    ("ROBOTMEM_COLLECTION", "arm\nlab", "collection"),
    ("ROBOTMEM_COLLECTION", " padded ", "collection"),
    ("ROBOTMEM_WEB_TOKEN", " s3cret ", "web_token"),
    ("ROBOTMEM_WEB_TOKEN", "s3cret\n", "web_token"),
    # Carried in HTTP headers: the token as Latin-1 (a browser), the keys as ASCII (robotmem's client).
    ("ROBOTMEM_WEB_TOKEN", "s3cret-日本", "web_token"),
    ("ROBOTMEM_OPENAI_API_KEY", "sk-clé", "openai_api_key"),
    ("ROBOTMEM_RERANK_API_KEY", "ключ", "rerank_api_key"),
    ("ROBOTMEM_WEB_ALLOWED_HOSTS", "robot.lan, ,x", "web_allowed_hosts"),
    ("ROBOTMEM_WEB_CONNECTION_LIMIT", "0", "web_connection_limit"),
    ("ROBOTMEM_WEB_CHANNEL_TIMEOUT_S", "-5", "web_channel_timeout_s"),
    ("ROBOTMEM_OLLAMA_URL", "localhost:11434", "ollama_url"),
    ("ROBOTMEM_LOG_LEVEL", "LOUD", "log_level"),
    ("ROBOTMEM_EMBED_BACKEND", "magic", "embed_backend"),
    # Path("") is the working directory: an empty path failed only when the file was opened, as "database .".
    ("ROBOTMEM_DB_PATH", "", "db_path"),
    ("ROBOTMEM_DB_PATH", "  ", "db_path"),
    ("ROBOTMEM_HOME", "", "home"),
]


@pytest.mark.parametrize(("variable", "value", "setting"), BAD_VALUES)
def test_a_setting_out_of_range_is_refused_naming_it(
    tmp_path: Path, variable: str, value: str, setting: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        load_settings({"ROBOTMEM_HOME": str(tmp_path), variable: value})
    message = refused.value.message
    assert setting in message and variable in message, message
    assert "\n" not in message


def test_a_web_token_is_never_shown_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as refused:
        load_settings({"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_WEB_TOKEN": " hunter2 "})
    assert "hunter2" not in refused.value.message and "(hidden)" in refused.value.message


@pytest.mark.parametrize(
    ("value", "expected"), [("1", True), ("yes", True), ("ON", True), ("0", False), ("no", False)]
)
def test_booleans_accept_only_clear_words(tmp_path: Path, value: str, expected: bool) -> None:
    loaded = load_settings({"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_RECALL_MIRROR": value})
    assert loaded.recall_mirror is expected


def test_the_config_file_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("dedup_jaccard = nan\n")
    with pytest.raises(ValidationError, match=r"config file .*dedup_jaccard.*nan"):
        load_settings({"ROBOTMEM_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_text("top_k = true\n")
    with pytest.raises(ValidationError, match="top_k"):
        load_settings({"ROBOTMEM_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_bytes(b"top_k = \xff\n")
    with pytest.raises(ValidationError, match="cannot be read"):
        load_settings({"ROBOTMEM_HOME": str(tmp_path)})


def test_an_empty_path_is_refused_wherever_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('db_path = ""\n')
    with pytest.raises(
        ValidationError, match=r"config file .*: setting 'db_path' is ''; accepted: a database"
    ):
        load_settings({"ROBOTMEM_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_text('home = ""\n')
    with pytest.raises(ValidationError, match=r"config file .*: setting 'home' is ''"):
        load_settings({"ROBOTMEM_HOME": str(tmp_path)})
    (tmp_path / "config.toml").unlink()
    with pytest.raises(ValidationError, match=r"setting 'db_path' is ''"):
        RobotMemory("", settings=Settings(home=tmp_path))
    assert not list(tmp_path.iterdir())


def test_allowed_hosts_are_a_comma_separated_list(tmp_path: Path) -> None:
    loaded = load_settings(
        {"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_WEB_ALLOWED_HOSTS": "Robot.lan, 10.0.0.5"}
    )
    assert web_allowed_hosts(loaded) == ["robot.lan", "10.0.0.5"]


def test_replace_checks_the_new_values(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="write_retries"):
        Settings(home=tmp_path).replace(write_retries=-1)


NUMERIC = [f.name for f in dataclasses.fields(Settings) if f.type in ("int", "float")]
TEXTS = ["collection", "web_token", "web_allowed_hosts", "log_level", "embed_backend", "ollama_url"]
BOOLEANS = [f.name for f in dataclasses.fields(Settings) if f.type == "bool"]
hostile_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["nan", "-inf", "1e400", "-1", "0", " 1 ", "1.5", "true", "", "\n", "9" * 30]),
)


@settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    changes=st.dictionaries(
        st.sampled_from([*NUMERIC, *TEXTS, *BOOLEANS]), hostile_text, min_size=1, max_size=4
    )
)
def test_any_environment_either_loads_in_range_or_fails_with_one_clean_error(
    tmp_path: Path, changes: dict[str, str]
) -> None:
    env = {"ROBOTMEM_HOME": str(tmp_path), **{f"ROBOTMEM_{k.upper()}": v for k, v in changes.items()}}
    try:
        loaded = load_settings(env)
    except ValidationError as exc:
        assert exc.message.startswith("environment variable ROBOTMEM_"), exc.message
        return
    for name in NUMERIC:
        assert math.isfinite(getattr(loaded, name)), name
    assert loaded.collection.strip() == loaded.collection and loaded.collection.isprintable()
    assert loaded.web_token == loaded.web_token.strip()
    assert 1 <= loaded.top_k <= loaded.max_n and loaded.max_insight_chars >= 1


def test_loaded_settings_make_a_working_memory(tmp_path: Path) -> None:
    env = {"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_DEDUP_JACCARD": "1", "ROBOTMEM_WRITE_RETRIES": "0"}
    with RobotMemory(embed_backend="none", settings=load_settings(env)) as memory:
        assert memory.learn("grip force 12 N held the mug")["status"] == "created"


def test_a_max_n_below_the_default_top_k_names_where_max_n_came_from(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as raised:
        load_settings({"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_MAX_N": "1"})
    assert raised.value.message.startswith("environment variable ROBOTMEM_MAX_N: setting 'top_k' is 5")
