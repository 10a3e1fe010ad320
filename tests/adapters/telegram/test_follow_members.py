"""A follow of a group's own private count reaches a member only while they are one, with the
whole bot, the real aiogram client and the fake: Ada and Bo follow the group's private count in
the group; Ada leaves it (or is removed), her private chat with the bot outlives that: the
final is not sent to her, she is unfollowed once (one audit row, one log line), Bo gets it, asked
about once for both messages (a yes is kept). A public count asks nothing: leaving changes
nothing."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram
from tests.helpers import tally

from .conftest import shown
from .test_app import VirtualTime, config, from_bot, running
from .test_follow import CLINCH, FINAL, RECEIVED, union_hall
from .test_private import handled


@pytest.mark.parametrize(
    ("public", "gone"),
    [(False, "left"), (False, "kicked"), (True, "left")],
    ids=["private-left", "private-kicked", "public-left"],
)
async def test_who_left_the_group_of_its_private_count_is_unfollowed_once(
    tmp_path: Path, public: bool, gone: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        ada, bo, group = union_hall(fake)
        ada_dm, bo_dm = fake.private_chat(ada), fake.private_chat(bo)
        async with running(tmp_path, fake, vt, config(tmp_path, fake, admin_chats=[])) as bot:
            async with bot.app.db.begin() as conn:
                count = await count_rows.get(conn, "bessemer-2021")
                assert count is not None
                owned = dataclasses.replace(count, owner=f"telegram:{group.id}", public=public)
                await count_rows.upsert(conn, owned)
            for user in (ada, bo):
                fake.command(group, user, "/count follow bessemer-2021 events")
                await handled(bot)
            fake.add_member(group, ada, gone)  # type: ignore[arg-type]
            with caplog.at_level(logging.WARNING, logger="bot.delivery.worker"):
                await bot.app.pipeline.ingest(tally(463, 1100, received=RECEIVED))
                await bot.app.pipeline.ingest(CLINCH)
                await bot.settle()
                await bot.app.pipeline.ingest(FINAL)
                await bot.settle()
            async with bot.app.db.connect() as conn:
                left = [f.user_id for f in await follow_rows.for_count(conn, "bessemer-2021")]
                entries = await audit_rows.recent(conn, limit=20)
        ada_got = [shown(m) for m in from_bot(fake, ada_dm)[1:]]  # after the follow's answer
        bo_got = [shown(m) for m in from_bot(fake, bo_dm)[1:]]
        asks = [c for c in fake.calls_to("getChatMember") if str(group.id) in str(c)]
    assert len(bo_got) == 3
    assert "Final tally" in bo_got[-1]
    lines = [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()]
    unfollows = [e for e in entries if e.action == "unfollow"]
    if public:
        assert ada_got == bo_got
        assert sorted(left) == sorted([str(ada.id), str(bo.id)])
        assert lines == []
        assert unfollows == []
        assert asks == []
    else:
        assert ada_got == []
        assert left == [str(bo.id)]
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"unfollowed telegram:{ada.id}: ")
        assert f"no longer a member of chat {group.id}" in lines[0]
        assert len(unfollows) == 1
        assert len(asks) == 2  # Ada's no, once; Bo's yes, kept for the other messages
