"""A published spreadsheet over HTTP as CSV, e.g. a Google Sheet "publish to web" CSV link that
a volunteer fills in while watching the count.

Config (``kind = "http_csv"``)::

    [counts.source]
    kind = "http_csv"
    name = "volunteer-sheet"            # optional, default "http-csv"; goes into Tally.source
    url = "https://docs.google.com/spreadsheets/d/e/.../pub?output=csv"
    layout = "rows"                     # optional: "rows" (default) or "pairs"
    timeout = 10                        # optional, seconds for the whole request
    max_bytes = 1048576                 # optional, largest body accepted
    headers = {}                        # optional, never secrets
    headers_from_env = {}               # optional, header -> env var name

    [counts.source.fields]              # optional; votes default to columns named as the ids
    votes.yes = "Yes"                   # rows: column headers; pairs: first-column names
    votes.no = "No"
    void = "Void"
    challenged = "Challenged"
    received = "Received"
    state = "State"

    [counts.source.state_values]        # optional
    "recess" = "paused"

The layouts are described in :mod:`bot.ingest.sources.csv_doc`, the reading rules in
:mod:`bot.ingest.sources.mapping` and the HTTP behaviour in :mod:`bot.ingest.sources.http`. An HTML
answer (what Google sends for a sheet that is not published) is a PermanentSourceError.
"""

from __future__ import annotations

from bot.base.clock import Clock
from bot.domain.model import Count, Tally
from bot.errors import PermanentSourceError
from bot.ingest.sources.csv_doc import CsvLayout, parse_csv, tally_from_csv
from bot.ingest.sources.http import HttpOptions, HttpSource, Response
from bot.ingest.sources.mapping import FieldMap, StateValues


class HttpCsvSource(HttpSource):
    """A CSV document fetched over HTTP (see the module docstring for the config)."""

    accept = "text/csv"

    def __init__(
        self,
        count: Count,
        options: HttpOptions,
        *,
        clock: Clock,
        layout: CsvLayout = CsvLayout.ROWS,
        fields: FieldMap | None = None,
        states: StateValues | None = None,
        name: str = "http-csv",
    ) -> None:
        super().__init__(count, options, clock=clock, fields=fields, states=states, name=name)
        self.layout = CsvLayout(layout)

    def _parse(self, response: Response) -> Tally:
        content_type = (response.content_type or "").split(";")[0].strip().casefold()
        if content_type == "text/html":
            raise PermanentSourceError(
                f"{self.label}: the server sent an HTML page, not CSV "
                "(is the sheet published to the web as CSV?)"
            )
        records = parse_csv(response.data, self.label)
        return tally_from_csv(
            records,
            self.layout,
            self.count,
            self.fields,
            self.states,
            clock=self._clock,
            source=self.name,
            label=self.label,
        )
