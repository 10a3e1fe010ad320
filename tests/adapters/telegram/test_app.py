"""The whole bot with Telegram, found as a plug-in: ``bot.runtime.app.App`` on SQLite with the real
dispatcher, ``[telegram]`` pointed at the loopback fake, the real aiogram Bot long-polling it.

A group member subscribes, an admin of the group (``getChatMember`` says so, and the chat is in
``admin_chats``) posts an update: the group gets it as a sendMessage; the final comes with its
chart as a sendPhoto; a member's update is refused; ``/readyz``'s ``adapter:telegram`` is green,
and red once getUpdates gets no answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from adapters.telegram.plugin import PLUGIN
from adapters.telegram.settings import BOT_TOKEN, TelegramSettings
from bot.domain.message import Message
from bot.domain.model import TallyState
from bot.domain.subscription import Platform
from bot.ops import readiness
from bot.platform import Context
from bot.runtime.app import App
from bot.settings.loader import Config, parse
from bot.settings.secrets import Secret
from bot.store import outbox
from bot.store.schema import outbox as outbox_table
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram, StoredMessage
from tests.fakes.telegram_fake.testing import loopback_session
from tests.helpers import tally

from .conftest import shown

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter

TELEGRAM = Platform("telegram")
TITLE = "Amazon BHM1 union election, Bessemer AL"


class VirtualTime:
    """One clock for the bot and the fake; the bot's sleeps advance it instead of waiting."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.clock.advance(seconds)
        await asyncio.sleep(0)


def config(tmp_path: Path, fake: FakeTelegram, admin_chats: list[int]) -> Config:
    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            "telegram": {"api_base": fake.base_url, "admin_chats": admin_chats},
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": TITLE,
                    "rule": "majority",
                    "tie_holder": "no",
                    "eligible": 5876,
                    "received": 3215,
                    "choices": [
                        {"id": "yes", "label": "Yes (RWDSU)"},
                        {"id": "no", "label": "No union"},
                    ],
                    "source": {"kind": "manual"},
                    "public": True,  # followed from any group
                }
            ],
        },
        tmp_path / "tallybot.toml",
    )


@dataclass
class Running:
    app: App
    adapter: TelegramAdapter
    fake: FakeTelegram
    vt: VirtualTime

    async def settle(self) -> None:
        """Deliver everything: drain what is due, then jump the clock to the next retry."""
        for _ in range(100):
            await self.app.idle()
            pending = outbox_table.c.status == str(outbox.DeliveryStatus.PENDING)
            async with self.app.db.connect() as conn:
                left = await conn.scalar(select(func.count()).where(pending))
                if not left:
                    return
                now = self.vt.clock.now()
                at = await conn.scalar(
                    select(func.min(outbox_table.c.next_attempt_at)).where(
                        pending, outbox_table.c.next_attempt_at > now
                    )
                )
            assert at is not None, "deliveries are due but the dispatcher sends none"
            self.vt.clock.advance((at - now).total_seconds())
        raise AssertionError("the outbox never emptied")

    async def sent(self) -> dict[int, Message]:
        """The messages delivered, by their Telegram message id."""
        async with self.app.db.connect() as conn:
            rows = (await conn.execute(select(outbox_table))).mappings().all()
        return {
            int(r["platform_message_id"]): Message.from_json(r["payload"])
            for r in rows
            if r["status"] == str(outbox.DeliveryStatus.SENT)
        }

    async def problem(self) -> str | None:
        result = await readiness.check(self.app)
        (check,) = [c for c in result.checks if c.name == "adapter:telegram"]
        return check.problem


@asynccontextmanager
async def running(
    tmp_path: Path, fake: FakeTelegram, vt: VirtualTime, cfg: Config
) -> AsyncIterator[Running]:
    from adapters.telegram.adapter import TelegramAdapter

    settings = cfg.settings("telegram")
    assert isinstance(settings, TelegramSettings)

    def factory(commands: Any) -> TelegramAdapter:
        context = Context(
            handle=commands.handle,
            clock=vt.clock,
            throttle=commands.throttle,  # the core's own limits, as bot.runtime.plugins gives them
            admins=PLUGIN.admins(settings),
            place=PLUGIN.place,
            secrets={BOT_TOKEN: Secret(BOT_TOKEN, fake.token)},
            store=commands.db,  # the ledger in the store, as bot.runtime.plugins.context gives it
        )
        return TelegramAdapter(settings, context, session=loopback_session(), sleep=vt.sleep)

    app = App(cfg, {TELEGRAM: factory}, clock=vt.clock, sleep=vt.sleep, poll=False)
    async with app:
        adapter = app.adapters[TELEGRAM]
        assert isinstance(adapter, TelegramAdapter)
        yield Running(app, adapter, fake, vt)


def from_bot(fake: FakeTelegram, chat: Any) -> list[StoredMessage]:
    return [m for m in fake.visible(chat) if m.source in ("sendMessage", "sendPhoto")]


async def test_a_group_subscribes_and_gets_the_update_and_the_final_chart(tmp_path: Path) -> None:
    from adapters.telegram.once import StoreLedger

    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        member, admin = fake.add_user("Ada", "ada"), fake.add_user("Bo", "bo")
        group = fake.add_group("Union hall")
        fake.add_member(group, member)
        fake.add_member(group, admin, "administrator")
        member_dm, admin_dm = fake.private_chat(member), fake.private_chat(admin)
        cfg = config(tmp_path, fake, admin_chats=[group.id])
        assert cfg.plugins["telegram"] is PLUGIN  # found through the entry point
        async with running(tmp_path, fake, vt, cfg) as bot:
            assert await bot.problem() is None

            fake.command(group, member, "/count subscribe bessemer-2021")
            await fake.wait_for(lambda: len(from_bot(fake, group)) == 1)
            assert "Subscribed" in shown(from_bot(fake, group)[0])

            fake.command(group, member, "/count update bessemer-2021 yes=1 no=2")
            await fake.wait_for(lambda: len(from_bot(fake, member_dm)) == 1)
            (refusal,) = from_bot(fake, member_dm)  # privately: the group sees nothing of it
            assert (
                shown(refusal) == "Error: only admins can update figures; ask an admin of this chat"
            )

            fake.command(group, admin, "/count update bessemer-2021 yes=463 no=1100")
            await fake.wait_for(lambda: len(from_bot(fake, admin_dm)) == 1)
            await bot.settle()
            assert len(from_bot(fake, group)) == 2  # the subscription's answer and the update
            sent = await bot.sent()
            (update_id,) = sent
            assert isinstance(bot.adapter.ledger, StoreLedger)  # kept in the App's store
            known = await bot.adapter.ledger.known(group.id, "tb1")
            assert known.top == update_id
            update = fake.messages(group)[
                [m.message_id for m in fake.messages(group)].index(update_id)
            ]
            assert update.source == "sendMessage"
            assert shown(update).splitlines()[:2] == [TITLE, "First results: No union leads by 637"]
            assert sent[update_id].headline == "First results: No union leads by 637"
            assert "Yes (RWDSU) — 463 votes" in shown(update)
            assert not update.disable_notification  # no repair: nothing was in doubt

            final = await bot.app.pipeline.ingest(
                tally(738, 1798, challenged=505, received=738 + 1798 + 505, state=TallyState.FINAL)
            )
            assert final.message is not None
            await bot.settle()
            photos = [m for m in from_bot(fake, group) if m.source == "sendPhoto"]
            (photo,) = photos
            assert photo.photo_sha256 is not None
            assert shown(photo).splitlines()[:2] == [TITLE, final.message.headline]
            assert final.message.final
            assert len(fake.calls_to("sendPhoto")) == 1

            # Polling dies: every getUpdates fails (502), the retries back off on the clock.
            assert await bot.problem() is None
            fake.fail_next("getUpdates", status=502, times=1000)
            clock.advance(31)  # the waiting long poll ends; the next ones fail
            await fake.wait_for(lambda: not bot.adapter.lifecycle.health().ok)
            problem = await bot.problem()
            assert problem is not None
            assert problem.startswith("telegram: no answer to getUpdates for ")


async def test_a_post_whose_answer_was_lost_is_in_the_group_once(tmp_path: Path) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        member = fake.add_user("Ada", "ada")
        group = fake.add_group("Union hall")
        fake.add_member(group, member)
        async with running(tmp_path, fake, vt, config(tmp_path, fake, admin_chats=[])) as bot:
            fake.command(group, member, "/count subscribe bessemer-2021")
            await fake.wait_for(lambda: len(from_bot(fake, group)) == 1)
            fake.lose_answer("sendMessage")  # Telegram posts it; the answer never comes
            result = await bot.app.pipeline.ingest(tally(463, 1100))
            assert result.message is not None
            await bot.settle()
            sent = await bot.sent()
        posts = [m for m in from_bot(fake, group) if result.message.headline in shown(m)]
        (post,) = posts  # the silent copy of the repair was found and deleted
        assert list(sent) == [post.message_id]
        assert len(fake.calls_to("sendMessage")) == 3  # reply, lost, silent repair
        assert len(fake.calls_to("deleteMessage")) == 1


async def test_admins_are_named_by_their_names_not_their_ids(tmp_path: Path) -> None:
    """Issue 28, part 4: ``admins add`` and ``admins list`` say who by the member's name (from
    getChatMember in the chat, or from the update itself), not by a number; one who is not in
    the chat is said by id."""
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        member, admin = fake.add_user("Ada", "ada"), fake.add_user("Bo", "bo")
        stranger = fake.add_user("Cy", "cy")
        group = fake.add_group("Union hall")
        fake.add_member(group, member)
        fake.add_member(group, admin, "administrator")
        admin_dm = fake.private_chat(admin)
        cfg = config(tmp_path, fake, admin_chats=[group.id])
        async with running(tmp_path, fake, vt, cfg):
            for who in (member.id, admin.id, stranger.id):
                fake.command(group, admin, f"/count admins add bessemer-2021 {who}")
            fake.command(group, admin, "/count admins list bessemer-2021")
            await fake.wait_for(lambda: len(from_bot(fake, admin_dm)) == 4)
    said = [shown(m) for m in from_bot(fake, admin_dm)]
    assert said == [
        "Ada now administers bessemer-2021.",
        "Bo now administers bessemer-2021.",  # the sender: named by the update
        f"user {stranger.id} now administers bessemer-2021.",  # not in the chat
        f"bessemer-2021 is also administered by: Ada, Bo, user {stranger.id}",
    ]
    asked = {int(c.args["user_id"]) for c in fake.calls_to("getChatMember")}
    assert {member.id, stranger.id} <= asked  # looked up in the chat
