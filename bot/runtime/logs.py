"""Structured logs: JSON lines for machines, readable lines for people, never a secret.

``setup`` (called by the CLI) sends every log record to stderr: one JSON object per line when
stderr is not a terminal (a container, a service manager), a readable line when it is. Context
given with ``extra=`` rides along as fields: every delivery line of the dispatcher carries
``count``, ``platform`` and ``channel``; the poller's carry ``count`` and ``source``::

    {"ts": "2021-04-08T18:00:00.000Z", "level": "warning", "logger": "bot.delivery.worker",
     "msg": "delivery failed (attempt 1), retrying in 0.8 s: 503", "count": "bessemer-2021",
     "platform": "discord", "channel": "8123/9456", "delivery": 17, "action": "post"}

:class:`SecretFilter`, on the handler, replaces every configured secret value with ``***`` in
the message, its arguments, the traceback and every ``extra`` field, before any formatter sees
the record. :func:`secret_values` lists them: the known tokens of :mod:`bot.settings.secrets`, the
push secret and the variables a source's ``headers_from_env`` names.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO

from bot.ingest.sources.settings import HttpSettings
from bot.platform import Plugins
from bot.settings import secrets as secret_store
from bot.settings.loader import Config

REDACTED = "***"
HANDLER_NAME = "tallybot"
QUIET = {
    "apscheduler": logging.WARNING,
    "aiohttp.access": logging.WARNING,
    "alembic": logging.WARNING,
    "aiosqlite": logging.INFO,
}
"""Libraries that are chatty at INFO (apscheduler logs every job run; alembic its set-up at
every start: the store logs the revisions it applies itself), or that show secrets at DEBUG
(aiosqlite logs every statement with its parameters, the bot tokens of Slack installations
among them)."""

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
_PLAIN = (int, float, bool, type(None))


def extras(record: logging.LogRecord) -> dict[str, object]:
    """The fields given with ``extra=`` (everything a plain LogRecord does not have)."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def secret_values(cfg: Config | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """Every configured secret value: ``bot.settings.secrets.KNOWN``, every platform's tokens
    (``Plugin.secret_names``), the push secret of ``[server]``, the store's database password
    and the variables named by the sources' ``headers_from_env``."""
    names = (cfg.plugins if cfg is not None else Plugins.installed()).secret_names()
    if cfg is not None:
        if cfg.server is not None:
            names.append(cfg.server.push_secret_env)
        if cfg.store_password_env is not None:
            names.append(cfg.store_password_env)
        for cc in cfg.counts:
            if isinstance(cc.source, HttpSettings):
                names.extend(cc.source.headers_from_env.values())
    return secret_store.all_values(env, names)


class SecretFilter(logging.Filter):
    """Replaces every secret value with ``***`` in a record (message, traceback, extras).

    Whole tokens only: a value is replaced where it stands alone, not where it is part of a
    longer word (so a secret that happens to be a common string does not turn "next run" into
    "ne***t run"; :mod:`bot.settings.secrets` refuses values too short to be real anyway).
    """

    def __init__(self, values: Iterable[str]) -> None:
        super().__init__()
        # Longest first, so a secret that contains another is replaced whole.
        self.values = sorted({v for v in values if v}, key=len, reverse=True)
        alternatives = "|".join(re.escape(v) for v in self.values)
        self._pattern = re.compile(f"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")

    def scrub(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self.values else text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.values:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format
            message = f"{record.msg} {record.args}"
        record.msg, record.args = self.scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        for key, value in extras(record).items():
            if not isinstance(value, _PLAIN):
                setattr(record, key, self.scrub(str(value)))
        return True


def _timestamp(record: logging.LogRecord) -> str:
    at = datetime.fromtimestamp(record.created, UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, the extras, and exc if any."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in extras(record).items():
            out.setdefault(key, value if isinstance(value, _PLAIN) else str(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = record.stack_info
        return json.dumps(out, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """One line a record: ``2021-04-08 18:00:00 WARNING bot.delivery.worker: msg count=... ...``."""

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M:%S")
        line = f"{at} {record.levelname:<7} {record.name}: {record.getMessage()}"
        fields = " ".join(f"{k}={v}" for k, v in extras(record).items())
        if fields:
            line = f"{line}  {fields}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line = f"{line}\n{record.exc_text}"
        if record.stack_info:
            line = f"{line}\n{record.stack_info}"
        return line


def _is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def setup(
    *,
    secrets: Iterable[str] = (),
    stream: IO[str] | None = None,
    level: int = logging.INFO,
    json_lines: bool | None = None,
) -> logging.Handler:
    """Log every record at ``level`` or above to ``stream`` (stderr), scrubbed of ``secrets``.

    ``json_lines`` None: JSON lines unless the stream is a terminal. Calling it again replaces
    the handler it installed before. Returns the handler (for :func:`teardown`).
    """
    stream = sys.stderr if stream is None else stream
    if json_lines is None:
        json_lines = not _is_terminal(stream)
    handler = logging.StreamHandler(stream)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(SecretFilter(secrets))
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        teardown(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name, quiet in QUIET.items():
        logging.getLogger(name).setLevel(max(quiet, level))
    return handler


def teardown(handler: logging.Handler) -> None:
    """Remove a handler :func:`setup` installed (it does not close the stream)."""
    logging.getLogger().removeHandler(handler)


@contextmanager
def configured(
    *,
    secrets: Iterable[str] = (),
    stream: IO[str] | None = None,
    level: int = logging.INFO,
    json_lines: bool | None = None,
) -> Iterator[logging.Handler]:
    """:func:`setup` for the length of a block; afterwards the handler and levels are undone."""
    names = ["", *QUIET]
    before = {name: logging.getLogger(name).level for name in names}
    handler = setup(secrets=secrets, stream=stream, level=level, json_lines=json_lines)
    try:
        yield handler
    finally:
        teardown(handler)
        for name, old in before.items():
            logging.getLogger(name).setLevel(old)
