"""A JSON feed over HTTP, read with a field mapping of dotted paths.

Config (``kind = "http_json"``)::

    [counts.source]
    kind = "http_json"
    name = "nlrb-feed"                  # optional, default "http-json"; goes into Tally.source
    url = "https://example.org/bessemer.json"
    timeout = 10                        # optional, seconds for the whole request
    max_bytes = 1048576                 # optional, largest body accepted
    headers = { "Accept-Language" = "en" }            # optional, never secrets
    headers_from_env = { Authorization = "FEED_TOKEN" }  # optional, header -> env var name

    [counts.source.fields]              # optional; votes default to the choice ids as paths
    votes.yes = "results.0.count"
    votes.no = "results.1.count"
    void = "void"
    challenged = "challenged"
    received = "received"
    state = "status"

    [counts.source.state_values]        # optional
    "in progress" = "counting"
    "recess" = "paused"
    "certified" = "final"

Paths are described in :mod:`bot.ingest.sources.json_doc`, the reading rules in
:mod:`bot.ingest.sources.mapping` and the HTTP behaviour in :mod:`bot.ingest.sources.http`. A fetch
returns None on 304 Not Modified, and when the body or its figures are the same as last time.
"""

from __future__ import annotations

from bot.base.clock import Clock
from bot.domain.model import Count, Tally
from bot.ingest.sources.http import HttpOptions, HttpSource, Response
from bot.ingest.sources.json_doc import check_paths, parse_json, tally_from_json
from bot.ingest.sources.mapping import FieldMap, StateValues


class HttpJsonSource(HttpSource):
    """A JSON document fetched over HTTP (see the module docstring for the config)."""

    accept = "application/json"

    def __init__(
        self,
        count: Count,
        options: HttpOptions,
        *,
        clock: Clock,
        fields: FieldMap | None = None,
        states: StateValues | None = None,
        name: str = "http-json",
    ) -> None:
        super().__init__(count, options, clock=clock, fields=fields, states=states, name=name)
        check_paths(self.fields, name)

    def _parse(self, response: Response) -> Tally:
        doc = parse_json(response.data, self.label, content_type=response.content_type)
        return tally_from_json(
            doc,
            self.count,
            self.fields,
            self.states,
            clock=self._clock,
            source=self.name,
            label=self.label,
        )
