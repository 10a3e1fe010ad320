"""CSV documents, e.g. a Google Sheet published to the web as CSV, in two layouts.

``rows``: a header row, then one row per reading::

    time,Yes,No,Void,Challenged,Received,State
    21:05,120,310,3,40,3215,in progress
    22:40,463,1100,10,505,3215,recess

The header is the first row with anything in it. The current tally is the LAST row with a value
in any mapped column (rows that are blank, or filled only in unmapped columns such as a
pre-written time, are skipped).

``pairs``: two columns, a field name and its value; other rows and columns are ignored::

    field,value
    yes,463
    no,"1,100"

Column headers (``rows``) and field names (``pairs``) are matched against the mapping trimmed and
case-insensitively. A UTF-8 byte order mark is tolerated. Figures may have thousands separators.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from enum import StrEnum

from bot.base.clock import Clock
from bot.domain.model import Count, Tally
from bot.errors import PermanentSourceError
from bot.ingest.sources.mapping import FieldMap, Found, StateValues, build_tally, normalize_word


class CsvLayout(StrEnum):
    """How the figures are laid out in a CSV document."""

    ROWS = "rows"
    """A header row, then one row per reading; the last non-empty row is current."""
    PAIRS = "pairs"
    """Rows of ``field,value``."""


def parse_csv(body: bytes, label: str) -> list[list[str]]:
    """The records of a CSV body (UTF-8, optional BOM), or PermanentSourceError."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PermanentSourceError(
            f"{label}: the body is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        return [list(record) for record in reader]
    except csv.Error as exc:
        raise PermanentSourceError(
            f"{label}: the body is not valid CSV at line {reader.line_num}: {exc}"
        ) from None


def column_letter(index: int) -> str:
    """The spreadsheet letter of a 0-based column index: 0 -> A, 26 -> AA."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _blank(record: Sequence[str]) -> bool:
    return not any(cell.strip() for cell in record)


def tally_from_csv(
    records: Sequence[Sequence[str]],
    layout: CsvLayout,
    count: Count,
    fields: FieldMap,
    states: StateValues,
    *,
    clock: Clock,
    source: str,
    label: str,
) -> Tally:
    """Read a tally out of CSV records with ``fields`` in the given layout."""
    try:
        lookup = (
            _rows_lookup(records, fields) if layout is CsvLayout.ROWS else _pairs_lookup(records)
        )
    except PermanentSourceError as exc:
        raise PermanentSourceError(f"{label}: {exc}") from None
    return build_tally(
        count, fields, states, lookup, thousands=True, clock=clock, source=source, label=label
    )


class _RowsLookup:
    def __init__(self, header: Sequence[str], columns: dict[str, int], row: Sequence[str], n: int):
        self.header = header
        self.columns = columns
        self.row = row
        self.n = n

    def __call__(self, target: str, column: str) -> Found:
        index = self.columns[normalize_word(column)]
        cell = self.row[index] if index < len(self.row) else ""
        name = self.header[index].replace("\ufeff", "").strip()
        return Found(cell, f"column {name!r} ({column_letter(index)}), row {self.n}")


def _rows_lookup(records: Sequence[Sequence[str]], fields: FieldMap) -> _RowsLookup:
    header_at = next((i for i, r in enumerate(records) if not _blank(r)), None)
    if header_at is None:
        raise PermanentSourceError("the sheet is empty: no header row")
    header = records[header_at]
    positions: dict[str, list[int]] = {}
    for index, cell in enumerate(header):
        positions.setdefault(normalize_word(cell), []).append(index)
    columns: dict[str, int] = {}
    for target, column in fields.targets():
        found = positions.get(normalize_word(column), [])
        if not found:
            names = ", ".join(repr(c.strip()) for c in header if c.strip())
            raise PermanentSourceError(
                f"{target}: no column {column!r} in the header row (row {header_at + 1}); "
                f"the columns are {names}"
            )
        if len(found) > 1:
            where = " and ".join(column_letter(i) for i in found)
            raise PermanentSourceError(
                f"{target}: column {column!r} appears more than once (columns {where})"
            )
        columns[normalize_word(column)] = found[0]
    mapped = sorted(set(columns.values()))
    for i in range(len(records) - 1, header_at, -1):
        row = records[i]
        if any(j < len(row) and row[j].strip() for j in mapped):
            return _RowsLookup(header, columns, row, i + 1)
    raise PermanentSourceError(f"no data rows below the header row (row {header_at + 1})")


def _pairs_lookup(records: Sequence[Sequence[str]]) -> _PairsLookup:
    entries: dict[str, list[tuple[int, str]]] = {}
    for i, record in enumerate(records):
        if not record or not record[0].strip():
            continue
        value = record[1] if len(record) > 1 else ""
        entries.setdefault(normalize_word(record[0]), []).append((i + 1, value))
    return _PairsLookup(entries)


class _PairsLookup:
    def __init__(self, entries: dict[str, list[tuple[int, str]]]) -> None:
        self.entries = entries

    def __call__(self, target: str, key: str) -> Found:
        found = self.entries.get(normalize_word(key), [])
        if not found:
            raise PermanentSourceError(f"{target}: no row with {key!r} in the first column")
        if len(found) > 1:
            rows = " and ".join(str(n) for n, _ in found)
            raise PermanentSourceError(f"{target}: {key!r} appears in more than one row ({rows})")
        n, value = found[0]
        return Found(value, f"row {n} ({key.strip()!r})")
