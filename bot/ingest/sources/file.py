"""A local JSON or CSV file, read with the same mappings as the HTTP sources.

The file is re-read only when its modification time or size changes; otherwise a fetch returns
None without reading it. A missing file is a TransientSourceError (it may appear later, e.g.
when a volunteer's export first lands); an unreadable one (a directory, no permission) is a
PermanentSourceError.

Config (``kind = "file"``)::

    [counts.source]
    kind = "file"
    name = "local-file"             # optional, default "file"; goes into Tally.source
    path = "feeds/bessemer.json"    # required; relative paths resolve against the config's folder
    format = "json"                 # optional: "json" or "csv"; default from the extension
    layout = "rows"                 # optional, CSV only: "rows" (default) or "pairs"
    max_bytes = 1048576             # optional, largest file accepted

    [counts.source.fields]          # optional, as for http_json (paths) or http_csv (columns)
    votes.yes = "yes"
    votes.no = "no"

    [counts.source.state_values]    # optional
    "recess" = "paused"
"""

from __future__ import annotations

import asyncio
import os
from enum import StrEnum
from pathlib import Path

from bot.base.clock import Clock
from bot.base.lifecycle import Closing
from bot.domain.model import Count, Tally
from bot.errors import ConfigError, PermanentSourceError, TransientSourceError
from bot.ingest.sources.changes import ChangeFilter
from bot.ingest.sources.csv_doc import CsvLayout, parse_csv, tally_from_csv
from bot.ingest.sources.http import DEFAULT_MAX_BYTES
from bot.ingest.sources.json_doc import check_paths, parse_json, tally_from_json
from bot.ingest.sources.mapping import FieldMap, StateValues

_Signature = tuple[int, int]


class FileFormat(StrEnum):
    """What a file source's file holds."""

    JSON = "json"
    CSV = "csv"

    @classmethod
    def from_suffix(cls, path: Path) -> FileFormat | None:
        """The format a file name's extension suggests, or None."""
        return {".json": cls.JSON, ".csv": cls.CSV}.get(path.suffix.casefold())


class FileSource(Closing):
    """A local JSON or CSV file (see the module docstring for the config)."""

    polled = True

    def __init__(
        self,
        count: Count,
        path: Path,
        *,
        clock: Clock,
        format: FileFormat | None = None,
        layout: CsvLayout = CsvLayout.ROWS,
        fields: FieldMap | None = None,
        states: StateValues | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        name: str = "file",
    ) -> None:
        self.name = name
        self.count = count
        self.path = path
        chosen = format or FileFormat.from_suffix(path)
        if chosen is None:
            raise ConfigError(
                f"{name}: cannot tell the format of {str(path)!r} from its extension; "
                'set format = "json" or "csv"'
            )
        self.format = chosen
        self.layout = CsvLayout(layout)
        self.fields = fields or FieldMap.default(count)
        self.fields.check(count, name)
        if self.format is FileFormat.JSON:
            check_paths(self.fields, name)
        if max_bytes < 1:
            raise ConfigError(f"{name}: max_bytes must be >= 1, got {max_bytes}")
        self.max_bytes = max_bytes
        self.states = states or StateValues()
        self._clock = clock
        self._seen: _Signature | None = None
        self._changes = ChangeFilter()
        self.reads = 0
        """How many times the file's contents were read (for tests and diagnostics)."""

    async def fetch(self) -> Tally | None:
        """The tally in the file, or None when the file (or its figures) did not change."""
        signature, data = await asyncio.to_thread(self._read_if_changed, self._seen)
        if data is None:
            return None
        self.reads += 1
        label = str(self.path)
        if self.format is FileFormat.JSON:
            doc = parse_json(data, label)
            tally = tally_from_json(
                doc,
                self.count,
                self.fields,
                self.states,
                clock=self._clock,
                source=self.name,
                label=label,
            )
        else:
            tally = tally_from_csv(
                parse_csv(data, label),
                self.layout,
                self.count,
                self.fields,
                self.states,
                clock=self._clock,
                source=self.name,
                label=label,
            )
        self._seen = signature
        return self._changes.accept(data, tally)

    def forget(self) -> None:
        """Read the file again at the next fetch and return its tally even if unchanged."""
        self._seen = None
        self._changes.forget()

    def _read_if_changed(self, seen: _Signature | None) -> tuple[_Signature, bytes | None]:
        """Runs in a worker thread: stat the open file and read it only if it changed."""
        try:
            with self.path.open("rb") as f:
                st = os.fstat(f.fileno())
                signature = (st.st_mtime_ns, st.st_size)
                if signature == seen:
                    return signature, None
                data = f.read(self.max_bytes + 1)
        except FileNotFoundError as exc:
            raise TransientSourceError(f"{self.path}: no such file (yet)") from exc
        except IsADirectoryError as exc:
            raise PermanentSourceError(f"{self.path}: is a directory, not a file") from exc
        except OSError as exc:
            raise PermanentSourceError(f"{self.path}: cannot read: {exc.strerror}") from exc
        if len(data) > self.max_bytes:
            raise PermanentSourceError(f"{self.path}: file larger than {self.max_bytes} bytes")
        return signature, data
