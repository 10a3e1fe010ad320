"""Push ingest over a real server: signed, fresh, capped, validated, and through the same
detector and formatter as a polled tally."""

from __future__ import annotations

import json
from typing import Any

from bot.ingest.poller import PollResult
from bot.ops import signing
from bot.store import audit as audit_rows
from bot.store import tallies as tally_rows
from tests.ops.conftest import ADMIN, CHAN, MANUAL, POLLED, SECRET, Bot, tally_path

BESSEMER_PAUSE = {
    "votes": {"yes": 463, "no": 1100},
    "void": 0,
    "challenged": 505,
    "received": 3215,
    "state": "counting",
    "correction": False,
}


async def stored(bot: Bot, count_id: str = POLLED) -> list[int]:
    async with bot.app.db.connect() as conn:
        return [t.seq for t in await tally_rows.history(conn, count_id)]


async def test_accepted_push_is_worded_and_delivered_like_a_polled_tally(bot: Bot) -> None:
    status, body = await bot.push(POLLED, {"votes": {"yes": 84, "no": 201}, "challenged": 505})
    assert status == 201
    assert body["result"] == "accepted"
    assert body["seq"] == 1
    assert body["headline"] == "First results: No union leads by 117"
    assert "first_results" in body["events"]
    assert body["significant"] is True
    await bot.app.idle()
    # The same figures polled from the feed would say the same thing: nothing new.
    assert await bot.app.pollers[POLLED].poll() is PollResult.NO_CHANGE
    assert bot.headlines(CHAN) == ["First results: No union leads by 117"]
    async with bot.app.db.connect() as conn:
        (last,) = await tally_rows.history(conn, POLLED)
        audit = await audit_rows.recent(conn, limit=5)
    assert last.source == "push"
    assert last.challenged == 505
    assert last.received is None
    assert [(a.actor, a.action, a.detail) for a in audit] == [("push", "push", "accepted")]


async def test_the_same_figures_again_are_no_change(bot: Bot) -> None:
    assert (await bot.push(POLLED, BESSEMER_PAUSE))[0] == 201
    status, body = await bot.push(POLLED, BESSEMER_PAUSE)
    assert (status, body) == (200, {"result": "no_change", "count": POLLED, "seq": 1})
    assert await stored(bot) == [1]


async def test_a_decrease_without_correction_is_rejected_and_stored(bot: Bot) -> None:
    assert (await bot.push(POLLED, BESSEMER_PAUSE))[0] == 201
    lower = {**BESSEMER_PAUSE, "votes": {"yes": 463, "no": 1090}}
    status, body = await bot.push(POLLED, lower)
    assert status == 409
    assert body["result"] == "rejected"
    assert body["reason"] == "decrease"
    assert "no 1,100 -> 1,090" in body["error"]
    async with bot.app.db.connect() as conn:
        (rejected,) = await tally_rows.rejected(conn, POLLED)
    assert rejected.reason == "decrease"
    assert rejected.tally.votes == {"yes": 463, "no": 1090}
    assert await stored(bot) == [1]
    await bot.app.idle()
    (notice,) = bot.headlines(ADMIN)
    assert notice.startswith("Rejected a tally for bessemer-2021 from push: figures went down")


async def test_a_correction_may_lower_figures(bot: Bot) -> None:
    assert (await bot.push(POLLED, BESSEMER_PAUSE))[0] == 201
    fixed = {**BESSEMER_PAUSE, "votes": {"yes": 463, "no": 1090}, "correction": True}
    status, body = await bot.push(POLLED, fixed)
    assert status == 201
    assert body["seq"] == 2
    assert "correction" in body["events"]
    assert await stored(bot) == [1, 2]


async def test_a_final_push_ends_the_count(bot: Bot) -> None:
    final = {
        "votes": {"yes": 738, "no": 1798},
        "void": 76,
        "challenged": 505,
        "received": 3117,
        "state": "final",
    }
    status, body = await bot.push(POLLED, final)
    assert status == 201
    assert body["headline"].startswith("Final tally: No union wins, 1,798 to 738")
    status, body = await bot.push(POLLED, {**final, "votes": {"yes": 739, "no": 1797}})
    assert status == 409
    assert body["reason"] == "final_changed"


async def test_manual_counts_take_pushes_too(bot: Bot) -> None:
    status, body = await bot.push(MANUAL, {"votes": {"ana": 10, "ben": 7, "cho": "3"}})
    assert status == 201
    assert body["count"] == MANUAL
    assert await stored(bot, MANUAL) == [1]


async def test_a_forged_signature_is_refused(bot: Bot) -> None:
    status, body = await bot.push(POLLED, BESSEMER_PAUSE, secret="not-the-secret")
    assert status == 401
    assert body["error"].startswith("bad signature")
    # A valid signature of another body does not cover this one.
    raw = json.dumps(BESSEMER_PAUSE).encode()
    signed = signing.headers(SECRET, bot.clock.now().timestamp(), b"{}", path=tally_path(POLLED))
    status, body = await bot.push(POLLED, raw, headers=signed)
    assert status == 401
    assert "bad signature" in body["error"]
    status, body = await bot.push(POLLED, raw, headers={signing.SIGNATURE_HEADER: "v0=" + "0" * 64})
    assert status == 401
    assert await stored(bot) == []


async def test_missing_headers_are_refused(bot: Bot) -> None:
    url = f"{bot.url}/api/counts/{POLLED}/tally"
    async with bot.http.post(url, json=BESSEMER_PAUSE) as resp:
        assert resp.status == 401
        assert (await resp.json())["error"] == "missing X-Tallybot-Timestamp header"
    status, body = await bot.push(POLLED, BESSEMER_PAUSE, headers={"X-Tallybot-Signature": ""})
    assert status == 401
    assert body["error"] == "missing X-Tallybot-Signature header"
    status, body = await bot.push(POLLED, BESSEMER_PAUSE, headers={"X-Tallybot-Timestamp": "12a"})
    assert status == 401
    assert "Unix time" in body["error"]
    status, body = await bot.push(
        POLLED, BESSEMER_PAUSE, headers={"X-Tallybot-Timestamp": "9" * 5000}
    )
    assert status == 401
    assert "Unix time" in body["error"]


async def test_a_stale_timestamp_is_refused_even_when_signed(bot: Bot) -> None:
    status, body = await bot.push(POLLED, BESSEMER_PAUSE, skew=-301)
    assert status == 401
    assert body["error"].startswith("stale timestamp")
    assert "301 s old" in body["error"]
    status, body = await bot.push(POLLED, BESSEMER_PAUSE, skew=+301)
    assert status == 401
    assert "future" in body["error"]
    assert await stored(bot) == []
    # Just inside five minutes is fine (the clock of a spreadsheet may be a little off).
    assert (await bot.push(POLLED, BESSEMER_PAUSE, skew=-299))[0] == 201


async def test_an_oversized_body_is_refused(bot: Bot) -> None:
    big = {**BESSEMER_PAUSE, "pad": "x" * 70_000}  # the cap is 65,536 bytes
    status, body = await bot.push(POLLED, big)
    assert status == 413
    assert "larger than 65536 bytes" in body["error"]

    async def chunks() -> Any:  # no Content-Length: the cap holds while reading
        for _ in range(20):
            yield b" " * 8192

    raw_status = None
    headers = signing.headers(SECRET, bot.clock.now().timestamp(), b"", path=tally_path(POLLED))
    async with bot.http.post(
        f"{bot.url}/api/counts/{POLLED}/tally", data=chunks(), headers=headers
    ) as resp:
        raw_status = resp.status
        assert "larger than" in (await resp.json())["error"]
    assert raw_status == 413
    assert await stored(bot) == []


async def test_malformed_json_is_a_400_saying_where(bot: Bot) -> None:
    status, body = await bot.push(POLLED, b'{"votes": {"yes": 463, "no": 1100}')
    assert status == 400
    assert "not valid JSON" in body["error"]
    assert "line 1 column" in body["error"]
    status, body = await bot.push(POLLED, b'{"votes": "\xff"}')
    assert status == 400
    assert "not UTF-8" in body["error"]


async def test_an_unknown_count_is_a_404_naming_the_counts(bot: Bot) -> None:
    status, body = await bot.push("bessemer-2022", BESSEMER_PAUSE)
    assert status == 404
    assert body["error"] == ("unknown count 'bessemer-2022'; counts are bessemer-2021, board-2026")


async def test_invalid_tallies_are_422_saying_what_is_wrong(bot: Bot) -> None:
    cases: list[tuple[object, str]] = [
        ({"votes": {"yes": 463, "no": 1100, "maybe": 4}}, "unknown choice 'maybe'"),
        ({"votes": {"yes": 463}}, "no figure for choice 'no'"),
        ({"votes": {"yes": -5, "no": 1100}}, "votes.yes (JSON path 'votes.yes'): -5 is negative"),
        ({"votes": {"yes": 463.5, "no": 1100}}, "463.5 is not an integer"),
        ({"votes": {"yes": True, "no": 1100}}, "True is not an integer"),
        ({"votes": {"yes": 1, "no": 2}, "void": "two"}, "'two' is not a whole number"),
        ({"votes": {"yes": 1, "no": 2}, "pad": 1}, "unknown field 'pad'"),
        ({"votes": {"yes": 1, "no": 2}, "state": "recess"}, '"state" must be one of'),
        ({"votes": {"yes": 1, "no": 2}, "correction": "yes"}, '"correction" must be true'),
        ({"votes": [463, 1100]}, '"votes" must be an object like {"votes": {"yes": 0'),
        ([463, 1100], "the body must be a JSON object"),
    ]
    for doc, problem in cases:
        status, body = await bot.push(POLLED, json.dumps(doc).encode())
        assert status == 422, (doc, body)
        assert body["error"].startswith("invalid tally: "), body
        assert problem in body["error"], (problem, body["error"])
    assert await stored(bot) == []
    async with bot.app.db.connect() as conn:
        assert await tally_rows.rejected(conn, POLLED) == []


async def test_over_received_is_the_detectors_call(bot: Bot) -> None:
    status, body = await bot.push(POLLED, {"votes": {"yes": 3000, "no": 1100}})
    assert status == 409
    assert body["reason"] == "over_received"


async def test_a_push_says_which_challenges_were_sustained(bot: Bot) -> None:
    """Issue 24: challenged ballots leave the pile opened or sustained, never silently."""
    assert (await bot.push(POLLED, BESSEMER_PAUSE))[0] == 201
    gone = {**BESSEMER_PAUSE, "challenged": 500}
    status, body = await bot.push(POLLED, gone)
    assert status == 409
    assert body["reason"] == "challenges_unexplained"
    assert body["error"].startswith("5 challenged ballots resolved (challenged 505 -> 500)")
    status, body = await bot.push(POLLED, {**gone, "sustained": 5})
    assert status == 201
    async with bot.app.db.connect() as conn:
        last = await tally_rows.last(conn, POLLED)
    assert last is not None
    assert (last.challenged, last.sustained) == (500, 5)
    lower = {**BESSEMER_PAUSE, "received": 3117}
    status, body = await bot.push(POLLED, {**lower, "challenged": 500, "sustained": 5})
    assert status == 409
    assert "received 3,215 -> 3,117" in body["error"]
