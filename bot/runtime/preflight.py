"""Everything ``tallybot run`` would refuse, found before anything starts.

``tallybot check-config`` and ``tallybot run`` both call :func:`load_checked`: the file itself
(:func:`bot.settings.loader.load`), then what the file asks of the machine, without connecting to
anything: at least one count and one platform, every count's source as the source factory
builds it (its files exist, the variables named in ``headers_from_env`` are set), and the tokens
of every enabled platform. Every problem is reported, in one :class:`~bot.errors.ConfigError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path

from bot.base.clock import SystemClock
from bot.domain.words import count_of
from bot.ingest.sources.factory import build_source
from bot.runtime.plugins import platform_secrets
from bot.settings import loader as config_mod
from bot.settings.loader import Config
from bot.settings.problems import Problems


def check(
    cfg: Config, env: Mapping[str, str] | None = None, problems: Problems | None = None
) -> None:
    """Raise one ConfigError naming every reason ``cfg`` could not run on this machine (and
    every problem already in ``problems``)."""
    problems = Problems(cfg.path) if problems is None else problems
    if not cfg.counts and not any(": counts" in p for p in problems.items):
        problems.add(
            f"{cfg.path}: counts: no count is configured: add a [[counts]] table for each "
            "(see config/example.toml)"
        )
    platform_tables = tuple(f"{cfg.path}: {name}" for name in cfg.plugins)
    if not cfg.platforms and not any(p.startswith(platform_tables) for p in problems.items):
        tables = " or ".join(f"[{name}]" for name in cfg.plugins) or "(none is installed)"
        problems.add(
            f"{cfg.path}: no platform enabled: add the table of one, {tables} (see "
            "config/example.toml)"
        )
    clock = SystemClock()
    for i, cc in enumerate(cfg.counts):
        build = partial(
            build_source,
            cc.count,
            cc.source,
            clock=clock,
            base_dir=cfg.base_dir,
            where=f"{cfg.path}: counts[{i}].source",
            env=env,
        )
        problems.attempt(build, None)
    problems.attempt(partial(platform_secrets, cfg, env), None)
    problems.raise_any()


def load_checked(path: Path, env: Mapping[str, str] | None = None) -> Config:
    """The configuration at ``path``, checked as :func:`check` does: the problems of the file
    and of the machine, all in one ConfigError."""
    problems = Problems(path)
    cfg = config_mod.load(path, problems)
    check(cfg, env, problems)
    return cfg


def summary(cfg: Config) -> str:
    """What a checked configuration runs: ``3 counts; console, discord; ops server on ...``."""
    platforms = sorted(cfg.platforms)
    parts = [count_of(len(cfg.counts), "count"), f"platforms: {', '.join(platforms)}"]
    if cfg.server is not None:
        parts.append(f"ops server on {cfg.server.host}:{cfg.server.port}")
    if cfg.web is not None:
        public = sum(1 for c in cfg.counts if c.public)
        parts.append(f"public pages on {cfg.web.host}:{cfg.web.port} ({public} public)")
        loopback = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(cfg.web.host)
        if loopback is not None and cfg.web.public_url is None:
            parts.append(
                f"link previews and page links point at {loopback}, which no reader reaches: "
                "set [web] public_url to where the public reaches the pages"
            )
    return "; ".join(parts)
