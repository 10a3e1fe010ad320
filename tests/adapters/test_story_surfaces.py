"""Issue 24 (parts 3, 5 and 6) end to end: typed at the console, posted to a channel that
follows the count, and shown by every renderer (Discord, Slack, Telegram, the console, plain
text) and the public page. The pure-core cases are in ``tests/test_story_words.py``."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from adapters.console.adapter import CONSOLE_CHANNEL, ConsoleAdapter, panel
from adapters.discord.embeds import message_embed
from adapters.slack.blocks import message_blocks
from adapters.telegram.render import render as telegram_render
from bot.commands.handler import Commands
from bot.commands.request import Reply, Request
from bot.domain.message import Message
from bot.domain.render_text import render as plain_render
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.web.view import view
from tests.adapters.rigs.base import count_table
from tests.adapters.rigs.console import ConsoleRig
from tests.fakes.discord_fake import markdown
from tests.fakes.slack_fake import markup


def flat(text: str) -> str:
    """Text as read: box drawing gone, every run of white space one space."""
    for ch in "│╭╮╰╯─":
        text = text.replace(ch, " ")
    text = text.replace("\u2060", "")  # Telegram's word joiner after "#": unseen
    return " ".join(text.split())


def surfaces(message: Message) -> Iterator[tuple[str, str]]:
    """What a reader sees of ``message`` on each surface, as flat text."""
    embed = message_embed(message)
    fields = [f"{f.name} {f.value}" for f in embed.fields]
    yield "discord", flat(markdown.visible("\n".join([embed.description or "", *fields])))
    blocks: list[dict[str, Any]] = [dict(b) for b in message_blocks(message)]
    yield "slack", flat(" ".join(markup.visible(t) for t in markup.text_objects(blocks)))
    yield "telegram", flat(telegram_render(message, UTC).plain)
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=False).print(panel(message, UTC))
    yield "console", flat(out.getvalue())
    yield "plain", flat(plain_render(message, UTC))


def everywhere(message: Message, *sentences: str, never: tuple[str, ...] = ()) -> None:
    for name, text in surfaces(message):
        for sentence in sentences:
            assert flat(sentence) in text, (name, sentence, text)
        for wrong in never:
            assert wrong not in text, (name, wrong, text)


class Typed(ConsoleRig):
    """The console rig, with the command handler at hand: what is typed goes through it and
    its reply is printed, as at the prompt."""

    commands: Commands

    @asynccontextmanager
    async def running(self, tmp_path: Path, title: str) -> AsyncIterator[App]:
        cfg = parse(
            {
                "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
                "counts": [count_table(title)],
            },
            tmp_path / "tallybot.toml",
        )
        console = ConsoleAdapter(out=self.out, rich=False, save_dir=tmp_path / "charts", zone=UTC)

        def factory(commands: Commands) -> ConsoleAdapter:
            self.commands = commands
            return console

        self.console = console
        app = App(
            cfg, {self.platform: factory}, clock=self.clock, sleep=self.hold.sleep, poll=False
        )
        async with app:
            yield app

    async def type(self, text: str) -> Reply:
        self.advance(3)  # a person's pace (8 commands in 20 s at most)
        request = Request(CONSOLE_CHANNEL, "console", "console", text, admin=True, home=True)
        reply = await self.commands.handle(request)
        self.console.show_reply(reply)
        await self.settle()
        return reply


@pytest.fixture
async def typed(tmp_path: Path) -> AsyncIterator[Typed]:
    rig = Typed()
    async with rig.run(tmp_path):
        yield rig


def printed(rig: Typed) -> str:
    return flat(rig.out.getvalue())


async def ok(rig: Typed, text: str) -> Message:
    reply = await rig.type(text)
    assert reply.ok, reply.text
    assert reply.message is not None, reply.text
    return reply.message


async def did(rig: Typed, text: str) -> None:
    reply = await rig.type(text)
    assert reply.ok, reply.text


async def page_lines(rig: Typed, count_id: str) -> str:
    async with rig.app.db.connect() as conn:
        count = await count_rows.get(conn, count_id)
        history = await tally_rows.history(conn, count_id, limit=50)
    assert count is not None
    shown = view(
        count, history, None, chart_url=lambda seq: f"/c/{seq}.svg", narrow_url=lambda seq: ""
    )
    return flat(" ".join([shown.headline, *(r.note for r in shown.rows), *shown.lines]))


async def test_three_choices_with_a_runoff_possible_then_certain(typed: Typed) -> None:
    await did(typed, "create nlrb Three-way choices=a:A,b:B,c:C received=106")
    await did(typed, "subscribe nlrb")
    m = await ok(typed, "update nlrb a=50 b=26 c=24")
    everywhere(
        m,
        "could reach a runoff",
        "Still able to win a majority: A.",
        "A runoff is possible, between two of A, B and C.",
        never=("cannot win",),
    )
    assert "A runoff is possible, between two of A, B and C." in printed(typed)  # the post
    assert "A runoff is possible, between two of A, B and C." in await page_lines(typed, "nlrb")
    m = await ok(typed, "update nlrb a=52 b=28 c=25")  # 1 left: a runoff between A and B
    everywhere(
        m,
        "A runoff between A and B is certain: no choice can reach a majority (unofficial)",
        "the ballots left cannot change who is in it",
        never=("cannot change it.",),
    )


async def test_threshold_counts_say_shares_and_who_can_no_longer_reach(typed: Typed) -> None:
    await did(
        typed,
        "create ratify Contract choices=ratify:Ratify,reject:Reject tie=reject rule=threshold "
        "threshold=2/3 received=1500",
    )
    m = await ok(typed, "update ratify ratify=950 reject=530")
    everywhere(
        m,
        "Reject has clinched the result: Ratify can no longer reach two-thirds (unofficial)",
        "Ratify has 64.2% of the valid votes (two-thirds needed).",
        never=("leads by", "no other choice"),
    )
    m = await ok(typed, "final ratify ratify=960 reject=540")
    everywhere(m, "Final tally: Ratify falls short of two-thirds (64.0%)", never=("leads by",))
    assert "leads by" not in await page_lines(typed, "ratify")


async def test_a_passing_ratification_says_with_what_share(typed: Typed) -> None:
    await did(
        typed,
        "create pass Contract choices=ratify:Ratify,reject:Reject tie=reject rule=threshold "
        "threshold=2/3 received=1400",
    )
    m = await ok(typed, "final pass ratify=1000 reject=400")
    everywhere(
        m,
        "Final tally: Ratify wins with 71.4% of the valid votes, reaching the two-thirds needed "
        "(1,000 to 400)",
    )


async def test_low_severity_sentences_through_the_console(typed: Typed) -> None:
    await did(typed, "create zero Zero choices=yes:Yes,no:No tie=no received=0")
    m = await ok(typed, "update zero yes=0 no=0 void=0")
    everywhere(m, "No votes counted yet.", never=("clinched", "needs 0"))
    await did(typed, "create even Even choices=yes:Yes,no:No rule=plurality received=100")
    m = await ok(typed, "final even yes=50 no=50")
    everywhere(m, "Final tally: a tie at 50 votes each", never=("a tie: tied",))
    await did(typed, "create voids Voids choices=yes:Yes,no:No tie=no received=3")
    m = await ok(typed, "final voids void=3")
    everywhere(m, "Final tally: no valid votes", "No valid votes.", never=("counted yet",))
    await did(typed, "create tie Tie choices=yes:Yes,no:No tie=no")
    m = await ok(typed, "update tie yes=5 no=5")
    everywhere(m, "First results: tied at 5 each", "A tie goes to No.")
    m = await ok(typed, "update tie yes=6")
    everywhere(m, "Tie broken: Yes leads by 1", never=("Lead change",))


async def test_hints_after_a_final_and_for_a_chat_count_work_when_followed(typed: Typed) -> None:
    await did(typed, "create loc7 Local 7 choices=yes:Yes,no:No tie=no received=10 eligible=20")
    await ok(typed, "final loc7 yes=3 no=7")
    over = await typed.type("update loc7 yes=5 no=7")
    assert not over.ok
    assert over.text.endswith(
        "(if more ballots came in, say so: correct loc7 yes=5 no=7 received=12)"
    )
    followed = await typed.type("correct loc7 yes=5 no=7 received=12")
    assert followed.ok, followed.text
    refused = await typed.type("correct loc7 yes=5 no=7 received=25")
    assert not refused.ok
    assert "eligible is set in the config" not in refused.text
    assert "(if more are eligible: edit loc7 eligible=N)" in refused.text
    assert (await typed.type("edit loc7 eligible=25")).ok
    again = await typed.type("correct loc7 yes=5 no=20 received=25")
    assert again.ok, again.text


async def test_the_bessemer_pause_says_what_organisers_ask(typed: Typed) -> None:
    await did(typed, "subscribe bessemer-2021")
    await ok(typed, "update bessemer-2021 yes=84 no=201 challenged=505")
    m = await ok(typed, "update bessemer-2021 yes=463 no=1100")
    everywhere(
        m,
        "This batch, since update #1: 1,278 votes; No union 70.3%, Yes (RWDSU) 29.7%.",
        "No union leads by 637 votes (40.8 points).",
        "Yes (RWDSU) needs 1,145 of the 1,652 ballots still to be counted or resolved (69.3%) "
        "to clinch; it has 29.6% so far.",
        "With the 505 challenged ballots set aside, that is 1,145 of the 1,147 unopened (99.8%).",
        "To draw level, Yes (RWDSU) needs 637 more votes than No union of the 1,652 ballots left.",
    )
    await ok(typed, "pause bessemer-2021")
    typed.advance(9 * 3600 + 600)
    status = await ok(typed, "status bessemer-2021")
    everywhere(
        status,
        "Count paused for 9 hours 10 minutes, since",
        "A tie goes to No union.",
        "Yes (RWDSU) needs 1,145 of the 1,652 ballots",
    )
    page = await page_lines(typed, "bessemer-2021")
    assert "Yes (RWDSU) needs 1,145 of the 1,652 ballots" in page
    assert "A tie goes to No union." in page


async def test_the_pace_of_counting_when_a_count_asks_for_it(typed: Typed) -> None:
    await did(typed, "create pace Pace choices=yes:Yes,no:No tie=no received=3000 pace=yes")
    await did(typed, "subscribe pace")
    await ok(typed, "update pace yes=100 no=200")
    typed.advance(90 * 60)
    m = await ok(typed, "update pace yes=300 no=600")  # 600 more in an hour and a half
    everywhere(m, "Counting at about 400 ballots an hour since update #1.")
    assert "Counting at about 400 ballots an hour since update #1." in printed(typed)
    status = await ok(typed, "status pace")
    everywhere(status, "Counting at about 400 ballots an hour since update #1.")
    await did(typed, "edit pace pace=no")
    quiet = await ok(typed, "status pace")
    everywhere(quiet, never=("Counting at",))
