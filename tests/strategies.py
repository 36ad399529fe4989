"""Hypothesis strategies shared by the tests: JSON values, hostile text, and values of the wrong type."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st


def examples(full: int) -> int:
    """The example count of a property that runs ``full`` examples under the default profile, scaled
    with the loaded profile (the ``fast`` profile of ``make test-fast`` runs a tenth, at least 5)."""
    scale = settings.default.max_examples / settings.get_profile("default").max_examples
    return full if scale == 1 else max(5, round(full * scale))


# Finite JSON scalars, then lists and objects of them to any depth hypothesis chooses.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)
json_objects = st.dictionaries(st.text(max_size=12), json_values, max_size=6)

# Fragments an attacker or a confused caller might send: FTS5 syntax, SQL, JSON-looking text.
FTS_SYNTAX = ['"', "*", ":", "(", ")", "-", "NEAR", "AND", "OR", "NOT", "^", "+", "{", "}", "NEAR(a b, 2)"]
SQL_FRAGMENTS = [
    "'; DROP TABLE memories; --",
    '" OR 1=1 --',
    "1; DELETE FROM memories",
    "') UNION SELECT * FROM sessions --",
    "%",
    "_",
    "\\",
    "memories_fts MATCH '*'",
]
ODD_TEXT = ["", " ", "\t\n", "\u200b", "\ufeff", "\U0001f916", "抓取力", "把持力", "그립", "٣", "ǅ", "ﬁ", "İ"]

fragments = st.sampled_from(FTS_SYNTAX + SQL_FRAGMENTS + ODD_TEXT)

# Any unicode except lone surrogates (which no UTF-8 file or socket can carry) mixed with fragments.
unicode_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
hostile_text = st.lists(st.one_of(unicode_text, fragments), min_size=1, max_size=8).map(" ".join)

# A few big inputs: repeated text past every limit, without generating megabytes character by character.
huge_text = st.builds(
    lambda unit, times: unit * times,
    st.sampled_from(["a", "抓", "grip ", '"*']),
    st.sampled_from([301, 2_001, 70_000, 300_000]),
)


def _nest(depth: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


# Nesting past the 32-level limit, as Python objects (kept shallow enough for hypothesis to print) and
# as JSON text far deeper (deep text overflowed the JSON parser's recursion once).
deep_json = st.builds(_nest, st.sampled_from([33, 200]), st.sampled_from(["list", "dict"]))
deep_json_text = st.builds(
    lambda depth, kind: (
        "[" * depth + "1" + "]" * depth if kind == "list" else '{"k":' * depth + "1" + "}" * depth
    ),
    st.sampled_from([33, 200, 5_000, 30_000]),
    st.sampled_from(["list", "dict"]),
)

non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
non_finite_json = st.one_of(
    non_finite.map(lambda x: {"value": x}),
    st.sampled_from(['{"value": NaN}', '{"value": Infinity}', '{"value": -Infinity}', "[NaN]"]),
)

# Values of the wrong type for any parameter.
wrong_types = st.one_of(
    st.integers(),
    st.floats(),
    st.booleans(),
    st.binary(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    st.tuples(st.integers()),
    st.just(object()),
    st.just({1, 2}),
    st.just(b"\xff\xfe"),
)

# Anything a caller could pass for one parameter.
anything = st.one_of(
    hostile_text, huge_text, json_values, deep_json, deep_json_text, non_finite, non_finite_json, wrong_types
)
