"""A signed push is accepted once: a replay inside its five-minute window is refused (409, no
alert), while an exact repeat of a push whose figures are still shown answers "no change"."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bot.ops import signing
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import push_receipts
from bot.store import tallies as tally_rows
from tests.ops.conftest import ADMIN, CHAN, POLLED, SECRET, Bot, tally_path
from tests.ops.test_push import BESSEMER_PAUSE, stored


def capture(bot: Bot, doc: dict[str, Any], count_id: str = POLLED) -> tuple[bytes, dict[str, str]]:
    """A push as it went over the wire: its body and signed headers, to send again later."""
    raw = json.dumps(doc).encode()
    path = tally_path(count_id)
    return raw, signing.headers(SECRET, bot.clock.now().timestamp(), raw, path=path)


async def test_a_captured_correction_replayed_after_a_newer_tally_is_refused(bot: Bot) -> None:
    assert (await bot.push(POLLED, BESSEMER_PAUSE))[0] == 201
    correction = {**BESSEMER_PAUSE, "votes": {"yes": 463, "no": 1090}, "correction": True}
    raw, headers = capture(bot, correction)
    status, body = await bot.push(POLLED, raw, headers=headers)
    assert (status, body["seq"]) == (201, 2)
    bot.clock.advance(60)
    newer = {**BESSEMER_PAUSE, "votes": {"yes": 600, "no": 1300}}
    assert (await bot.push(POLLED, newer))[0] == 201
    await bot.app.idle()
    posted = bot.headlines(CHAN)

    bot.clock.advance(120)  # still inside the captured push's five minutes
    status, body = await bot.push(POLLED, raw, headers=headers)

    assert status == 409
    assert body["result"] == "replayed"
    assert body["count"] == POLLED
    assert body["reason"] == "replayed"
    assert "already received" in body["error"]
    assert await stored(bot) == [1, 2, 3]
    async with bot.app.db.connect() as conn:
        last = await tally_rows.last(conn, POLLED)
        assert await tally_rows.rejected(conn, POLLED) == []
        [entry, *_] = await audit_rows.recent(conn, limit=5)
    assert last is not None
    assert last.votes == {"yes": 600, "no": 1300}
    await bot.app.idle()
    assert bot.headlines(CHAN) == posted  # no second "Correction: ..."
    assert bot.headlines(ADMIN) == []  # and no alert
    assert (entry.actor, entry.action, entry.allowed) == ("push", "push", False)
    assert entry.detail.startswith("refused: replayed")


async def test_an_exact_repeat_while_its_figures_stand_is_no_change(bot: Bot) -> None:
    """A sender that lost the answer and sends the very same request again."""
    raw, headers = capture(bot, BESSEMER_PAUSE)
    assert (await bot.push(POLLED, raw, headers=headers))[0] == 201
    bot.clock.advance(30)
    status, body = await bot.push(POLLED, raw, headers=headers)
    assert (status, body) == (200, {"result": "no_change", "count": POLLED, "seq": 1})
    assert await stored(bot) == [1]


async def test_a_rejected_push_sent_again_is_not_rejected_and_alerted_again(bot: Bot) -> None:
    assert (await bot.push(POLLED, BESSEMER_PAUSE))[0] == 201
    raw, headers = capture(bot, {**BESSEMER_PAUSE, "votes": {"yes": 463, "no": 1090}})
    assert (await bot.push(POLLED, raw, headers=headers))[1]["result"] == "rejected"
    for _ in range(3):
        status, body = await bot.push(POLLED, raw, headers=headers)
        assert (status, body["result"]) == (409, "replayed")
    async with bot.app.db.connect() as conn:
        assert len(await tally_rows.rejected(conn, POLLED)) == 1
    await bot.app.idle()
    assert len(bot.headlines(ADMIN)) == 1


async def test_after_its_window_a_replay_is_stale_and_its_receipt_forgotten(bot: Bot) -> None:
    raw, headers = capture(bot, BESSEMER_PAUSE)
    assert (await bot.push(POLLED, raw, headers=headers))[0] == 201
    bot.clock.advance(signing.TOLERANCE + 1)
    status, body = await bot.push(POLLED, raw, headers=headers)
    assert status == 401
    assert body["error"].startswith("stale timestamp")
    assert (await bot.push(POLLED, {**BESSEMER_PAUSE, "void": 3}))[0] == 201
    async with bot.app.db.connect() as conn:
        assert await push_receipts.count(conn) == 1  # the old one was cleaned up


async def twin(bot: Bot) -> str:
    """A second count of the operator's with the same choices as POLLED."""
    async with bot.app.db.begin() as conn:
        polled = await count_rows.get(conn, POLLED)
        assert polled is not None
        await count_rows.upsert(conn, replace(polled, id="bessemer-2021-recount"))
    return "bessemer-2021-recount"


def v0(raw: bytes, now: float) -> dict[str, str]:
    timestamp = str(int(now))
    return {
        signing.TIMESTAMP_HEADER: timestamp,
        signing.SIGNATURE_HEADER: signing.sign_v0(SECRET, timestamp, raw),
    }


async def test_the_same_figures_to_two_counts_in_one_second_are_two_pushes(bot: Bot) -> None:
    other = await twin(bot)
    raw = json.dumps(BESSEMER_PAUSE).encode()
    answers = [(await bot.push(count_id, raw))[0] for count_id in (POLLED, other)]
    bot.clock.advance(60)
    again = {**BESSEMER_PAUSE, "void": 3}
    old = json.dumps(again).encode()
    now = bot.clock.now().timestamp()
    by_v0 = [
        (await bot.push(count_id, old, headers=v0(old, now)))[0] for count_id in (POLLED, other)
    ]
    assert answers == [201, 201]
    assert by_v0 == [201, 201]  # a v0 signature names no count: its receipt is by count
    assert await stored(bot) == [1, 2]
    assert await stored(bot, other) == [1, 2]


async def test_a_captured_push_aimed_at_another_count_is_refused(bot: Bot) -> None:
    other = await twin(bot)
    raw, headers = capture(bot, BESSEMER_PAUSE)
    status, body = await bot.push(other, raw, headers=headers)
    assert status == 401
    assert body["error"].startswith("bad signature")
    assert await stored(bot, other) == []
    assert (await bot.push(POLLED, raw, headers=headers))[0] == 201
