"""Reading documents: CSV layouts, JSON paths, figures and states, without any I/O."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.model import MAX_FIGURE, Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.errors import ConfigError, PermanentSourceError
from bot.ingest.sources.csv_doc import CsvLayout, column_letter, parse_csv, tally_from_csv
from bot.ingest.sources.json_doc import check_path, parse_json, resolve, tally_from_json
from bot.ingest.sources.mapping import FieldMap, Found, StateValues, parse_figure
from bot.testing.clock import FakeClock

COUNT = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
)
CLOCK = FakeClock()
STATES = StateValues({"In Progress": "counting", "recess": "paused", "certified": "final"})
ROW_FIELDS = FieldMap(
    votes={"yes": "Yes", "no": "No"},
    void="Void",
    challenged="Challenged",
    received="Received",
    state="State",
)


def from_csv(text: str, layout: CsvLayout = CsvLayout.ROWS, fields: FieldMap = ROW_FIELDS) -> Tally:
    records = parse_csv(text.encode("utf-8"), "sheet.csv")
    return tally_from_csv(
        records, layout, COUNT, fields, STATES, clock=CLOCK, source="sheet", label="sheet.csv"
    )


def figures(t: Tally) -> tuple[object, ...]:
    return (dict(t.votes), t.void, t.challenged, t.received, t.state)


# -- CSV rows -------------------------------------------------------------------------------------


def test_rows_the_last_filled_row_is_current_with_bom_case_and_separators() -> None:
    text = (
        "\ufeff  time ,YES, no,void,CHALLENGED,Received , state\r\n"
        "21:05,120,310,3,40,3215,In Progress\r\n"
        '22:40,463,"1,100",10,505,"3,215", RECESS \r\n'
        "23:30,,,,,,\r\n"  # a time written ahead, nothing else yet
        ",,,,,,\r\n"
        "\r\n"
    )
    assert figures(from_csv(text)) == ({"yes": 463, "no": 1100}, 10, 505, 3215, TallyState.PAUSED)


def test_rows_a_bom_decoded_from_bytes_is_tolerated() -> None:
    records = parse_csv(b"\xef\xbb\xbfYes,No\n1,2\n", "sheet.csv")
    assert records[0] == ["Yes", "No"]


def test_rows_blank_optional_cells_take_the_defaults() -> None:
    text = "Yes,No,Void,Challenged,Received,State\n5,6,,,,\n"
    assert figures(from_csv(text)) == ({"yes": 5, "no": 6}, 0, 0, None, TallyState.COUNTING)


def test_rows_short_rows_read_as_blank_cells() -> None:
    text = "Yes,No,Void,Challenged,Received,State\n5,6\n"
    assert figures(from_csv(text))[0] == {"yes": 5, "no": 6}


def test_rows_a_missing_column_is_named_with_the_columns_there_are() -> None:
    with pytest.raises(PermanentSourceError) as info:
        from_csv("Yes,Nay,Void,Challenged,Received,State\n1,2,0,0,0,counting\n")
    message = str(info.value)
    assert message.startswith("sheet.csv: votes.no: no column 'No' in the header row (row 1)")
    assert "'Nay'" in message


def test_rows_an_empty_vote_cell_in_the_current_row_names_column_and_row() -> None:
    text = "Yes,No\n1,2\n3,\n"
    with pytest.raises(PermanentSourceError) as info:
        from_csv(text, fields=FieldMap({"yes": "yes", "no": "no"}))
    assert "votes.no (column 'No' (B), row 3): the value is empty" in str(info.value)


@pytest.mark.parametrize("cell", ["1,10", "1.100", "12a", "-4", "1e3", "4.0"])
def test_rows_a_bad_figure_names_column_row_and_value(cell: str) -> None:
    text = f'Yes,No\n1,"{cell}"\n'
    with pytest.raises(PermanentSourceError) as info:
        from_csv(text, fields=FieldMap({"yes": "yes", "no": "no"}))
    message = str(info.value)
    assert "votes.no (column 'No' (B), row 2)" in message
    assert repr(cell) in message


def test_rows_a_doubled_mapped_column_is_ambiguous() -> None:
    with pytest.raises(PermanentSourceError, match="column 'yes' appears more than once"):
        from_csv("Yes,No,yes\n1,2,3\n", fields=FieldMap({"yes": "yes", "no": "no"}))


def test_rows_an_empty_sheet_or_a_header_only_is_permanent() -> None:
    fields = FieldMap({"yes": "yes", "no": "no"})
    with pytest.raises(PermanentSourceError, match="no header row"):
        from_csv(",,\n\n", fields=fields)
    with pytest.raises(PermanentSourceError, match=r"no data rows below the header row \(row 2\)"):
        from_csv(",,\nYes,No\n,\n", fields=fields)


def test_rows_an_unknown_state_lists_the_known_ones() -> None:
    with pytest.raises(PermanentSourceError) as info:
        from_csv("Yes,No,Void,Challenged,Received,State\n1,2,0,0,0,adjourned\n")
    message = str(info.value)
    assert "state (column 'State' (F), row 2): 'adjourned' is not a known state" in message
    assert "'recess'" in message
    assert "'final'" in message


def test_csv_that_is_not_utf8_or_not_csv_is_permanent() -> None:
    with pytest.raises(PermanentSourceError, match="not UTF-8"):
        parse_csv(b"Yes,No\n\xff\xfe,1\n", "sheet.csv")
    with pytest.raises(PermanentSourceError, match="not valid CSV at line 2"):
        parse_csv(b'Yes,No\n1,"2\n', "sheet.csv")


# -- CSV pairs ------------------------------------------------------------------------------------

PAIR_FIELDS = FieldMap(
    votes={"yes": "Yes", "no": "No"}, void="void", received="Received", state="Status"
)


def test_pairs_are_matched_by_first_column_case_insensitively() -> None:
    text = (
        "\ufefffield,value,,\r\n"
        " yes ,463,,\r\n"
        'NO,"1,100",,\r\n'
        ",,,\r\n"
        "Void,10,,\r\n"
        "received,3215,,\r\n"
        "status,certified,,\r\n"
        "note,the count is done,,\r\n"
    )
    tally = from_csv(text, CsvLayout.PAIRS, PAIR_FIELDS)
    assert figures(tally) == ({"yes": 463, "no": 1100}, 10, 0, 3215, TallyState.FINAL)


def test_pairs_a_missing_or_doubled_name_is_permanent() -> None:
    with pytest.raises(
        PermanentSourceError, match=r"votes\.no: no row with 'No' in the first column"
    ):
        from_csv("yes,1\n", CsvLayout.PAIRS, PAIR_FIELDS)
    with pytest.raises(PermanentSourceError, match=r"'Yes' appears in more than one row \(1 and 3"):
        from_csv("yes,1\nno,2\nYES,3\n", CsvLayout.PAIRS, PAIR_FIELDS)


def test_pairs_a_bad_value_names_the_row() -> None:
    with pytest.raises(PermanentSourceError, match=r"votes.yes \(row 1 \('Yes'\)\): 'lots'"):
        from_csv("yes,lots\nno,2\n", CsvLayout.PAIRS, PAIR_FIELDS)


def test_column_letters() -> None:
    assert [column_letter(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]


# -- JSON -----------------------------------------------------------------------------------------

DOC = {"results": [{"count": 463}, {"count": 1100}], "0": {"x": 1}, "status": None}


def test_paths_walk_objects_and_lists() -> None:
    assert resolve(DOC, "results.1.count") == 1100
    assert resolve(DOC, "0.x") == 1  # digits name a key inside an object
    assert resolve(DOC, "status") is None


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("votes", "no key 'votes'"),
        ("results.2.count", "'results' has only 2 items"),
        ("results.first", "'results' is a list, and 'first' is not an index"),
        ("results.0.count.value", "'results.0.count' is int, not an object or a list"),
        ("status.x", "'status' is null"),
        ("results.0.total", "'results.0' has no key 'total'"),
    ],
)
def test_a_missing_path_says_which_step_fails(path: str, why: str) -> None:
    with pytest.raises(PermanentSourceError) as info:
        resolve(DOC, path)
    assert f"JSON path {path!r} not found: {why}" in str(info.value)


def test_path_syntax_is_checked() -> None:
    assert check_path("results.0.count") is None
    assert check_path("") == "the path is empty"
    assert "empty step" in (check_path("a..b") or "")
    assert "empty step" in (check_path(".a") or "")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"", "Expecting value at line 1 column 1"),
        (b'{"a": NaN}', "NaN is not allowed"),
        (b"[" * 100_000, "nested too deeply"),
        (b'{"a": "\xff"}', "not UTF-8"),
    ],
)
def test_bodies_that_are_not_json_are_named(body: bytes, problem: str) -> None:
    with pytest.raises(PermanentSourceError, match="feed: the body is not valid JSON") as info:
        parse_json(body, "feed")
    assert problem in str(info.value)


def test_a_null_optional_figure_is_its_default_and_a_null_state_is_counting() -> None:
    doc = {"y": 1, "n": 2, "v": None, "r": None, "s": None}
    fields = FieldMap({"yes": "y", "no": "n"}, void="v", received="r", state="s")
    tally = tally_from_json(
        doc, COUNT, fields, STATES, clock=CLOCK, source="feed", label="https://x/feed"
    )
    assert figures(tally) == ({"yes": 1, "no": 2}, 0, 0, None, TallyState.COUNTING)


def test_a_state_that_is_not_text_is_permanent() -> None:
    doc = {"yes": 1, "no": 2, "s": 3}
    fields = FieldMap({"yes": "yes", "no": "no"}, state="s")
    with pytest.raises(PermanentSourceError, match=r"https://x/feed: state \(JSON path 's'\): 3"):
        tally_from_json(doc, COUNT, fields, STATES, clock=CLOCK, source="f", label="https://x/feed")


# -- figures and states ---------------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=MAX_FIGURE))
def test_figures_read_back_in_every_accepted_spelling(n: int) -> None:
    assert parse_figure("void", Found(n, "x"), thousands=False) == n
    assert parse_figure("void", Found(str(n), "x"), thousands=False) == n
    assert parse_figure("void", Found(f" {n:,} ", "x"), thousands=True) == n


@given(st.integers(min_value=1000, max_value=10**15))
def test_separators_are_refused_outside_csv(n: int) -> None:
    with pytest.raises(PermanentSourceError, match="is not a whole number"):
        parse_figure("void", Found(f"{n:,}", "x"), thousands=False)


@given(st.integers(max_value=-1))
def test_negative_figures_are_refused_in_every_spelling(n: int) -> None:
    for value in (n, str(n), f"{n:,}"):
        with pytest.raises(PermanentSourceError, match="is negative"):
            parse_figure("void", Found(value, "x"), thousands=True)


def test_state_words_are_trimmed_and_casefolded_and_state_names_always_work() -> None:
    assert STATES.lookup("  in progress ") is TallyState.COUNTING
    assert STATES.lookup("RECESS") is TallyState.PAUSED
    assert STATES.lookup("Final") is TallyState.FINAL
    assert STATES.lookup("adjourned") is None


def test_state_values_refuse_unknown_states() -> None:
    with pytest.raises(ConfigError, match="bad state value 'done'"):
        StateValues({"certified": "done"})
    with pytest.raises(ConfigError, match="twice"):
        StateValues({"Recess": "paused", "recess ": "final"})
