"""Tally sources: where a count's figures come from.

The contract is :class:`bot.ingest.sources.base.Source`;
:func:`bot.ingest.sources.factory.build_source` makes one from config. The kinds: ``http_json``
(:mod:`bot.ingest.sources.http_json`), ``http_csv`` (:mod:`bot.ingest.sources.http_csv`), ``file``
(:mod:`bot.ingest.sources.file`), ``manual`` (:mod:`bot.ingest.sources.manual`) and ``replay``
(:mod:`bot.ingest.sources.replay`, recorded with
:mod:`bot.ingest.recording`). :mod:`bot.ingest.sources.health` tracks whether a source has gone
stale.
"""

from bot.ingest.sources.base import Source
from bot.ingest.sources.factory import build_source
from bot.ingest.sources.health import SourceHealth

__all__ = ["Source", "SourceHealth", "build_source"]
