"""Tally sources: where a count's figures come from.

The contract is :class:`bot.sources.base.Source`; :func:`bot.sources.factory.build_source` makes
one from config. The kinds: ``http_json`` (:mod:`bot.sources.http_json`), ``http_csv``
(:mod:`bot.sources.http_csv`), ``file`` (:mod:`bot.sources.file`), ``manual``
(:mod:`bot.sources.manual`) and ``replay`` (:mod:`bot.sources.replay`, recorded with
:mod:`bot.sources.record`). :mod:`bot.sources.health` tracks whether a source has gone stale.
"""

from bot.sources.base import FakeSource, Source
from bot.sources.factory import build_source
from bot.sources.health import SourceHealth

__all__ = ["FakeSource", "Source", "SourceHealth", "build_source"]
