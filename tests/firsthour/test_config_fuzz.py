"""No configuration, however broken, gets anything but a ConfigError out of the loader.

Hypothesis writes TOML documents (with tomli-w): the shipped example with values replaced,
removed or added anywhere in it, documents of tallybot's own keys holding arbitrary values, and
bytes that are not TOML at all. Each goes through what ``check-config`` and ``run`` do
(``bot.runtime.preflight.load_checked``, the source factory included).
"""

from __future__ import annotations

import copy
import datetime as dt
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.errors import ConfigError
from bot.runtime.preflight import load_checked

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE: dict[str, Any] = tomllib.loads((ROOT / "config" / "example.toml").read_text())
KEYS = sorted(
    {
        "store", "url", "password_env", "defaults", "interval", "stale_after_failures",
        "stale_after_minutes", "admins", "alerts", "console", "enabled", "discord", "guilds",
        "slack", "mode", "host", "port", "server", "push_secret_env", "max_body_bytes", "counts",
        "id", "title", "choices", "label", "rule", "tie_holder", "threshold", "eligible",
        "received", "status", "source", "kind", "name", "path", "speed", "fields", "votes",
        "state_values", "headers", "headers_from_env", "timeout", "max_bytes", "layout", "format",
        "http_json", "http_csv", "file", "manual", "replay", "yes", "no", "void", "challenged",
    }
)  # fmt: skip
ENV = {"FEED_TOKEN": "a-feed-token-0123456789", "SHORT": "abc"}

keys = st.one_of(st.sampled_from(KEYS), st.text(min_size=1, max_size=8))
scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(KEYS),
    st.sampled_from(["~nobody-here/x", "../x.json", "feeds/f.csv", "/", "x\x00y", "2/3", "0/0"]),
    st.sampled_from(["https://example.org/f.json", "http://[::1", "sqlite:///x", "FEED_TOKEN"]),
    st.datetimes(max_value=dt.datetime(9999, 1, 1)),
    st.dates(),
    st.times(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
documents = st.dictionaries(keys, values, max_size=6)


@st.composite
def mutated_example(draw: st.DrawFn) -> dict[str, Any]:
    """The example with a few values replaced, removed or added at any depth."""
    doc = copy.deepcopy(EXAMPLE)
    for _ in range(draw(st.integers(1, 4))):
        node: Any = doc
        while True:
            if isinstance(node, dict) and node:
                key = draw(st.sampled_from(sorted(node)))
            elif isinstance(node, list) and node:
                key = draw(st.integers(0, len(node) - 1))
            else:
                break
            child = node[key]
            if not isinstance(child, dict | list) or draw(st.integers(0, 2)) == 0:
                action = draw(st.sampled_from(["replace", "remove", "add"]))
                if action == "replace" or isinstance(node, list):
                    node[key] = draw(values)
                elif action == "remove":
                    del node[key]
                else:
                    node[draw(keys)] = draw(values)
                break
            node = child
    return doc


def check(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tallybot.toml"
        path.write_bytes(data)
        try:
            load_checked(path, env=ENV)
        except ConfigError as exc:
            problems = exc.problems
        else:
            return
    assert problems
    assert all(p and "\n" not in p for p in problems), problems  # one line each


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(mutated_example())
def test_the_example_with_anything_changed(doc: dict[str, Any]) -> None:
    check(tomli_w.dumps(doc).encode())


@FUZZ
@given(documents)
def test_documents_of_our_keys_with_any_values(doc: dict[str, Any]) -> None:
    check(tomli_w.dumps(doc).encode())


@FUZZ
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_anything_that_is_not_toml(data: bytes) -> None:
    check(data)
