"""The console adapter: a terminal is one channel; messages are printed, commands typed.

Rich formatting (colours, a panel per message) where the output is a terminal; plain text
otherwise, so that the demo reads the same in a log. Lines typed at the prompt are commands,
exactly as on Discord or Slack (``status``, ``update bessemer-2021 no=1200``, ...). A file that
comes with a reply (the PNG of ``chart``) or with a message (the chart of a final tally) is
written into a folder, ``tallybot-charts/`` in the current directory unless told otherwise, and
its path printed.

Text is shown as typed: every text goes into rich as a ``Text`` (never parsed as rich markup,
so ``[bold]`` or ``[link=...]`` in a title stays as it is) after ``bot.domain.safe_text.clean`` (no
control characters, so no escape sequence from a source reaches the terminal). Times are shown
in ``zone``: ``[defaults] timezone`` from the configuration, else the machine's own zone.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection, Iterable
from datetime import datetime
from pathlib import Path
from typing import IO, Self

from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from adapters.console.prompt import read_commands
from bot.platform import (
    UNLIMITED,
    Adapter,
    Attachment,
    ChannelRef,
    Context,
    Earlier,
    Limits,
    Message,
    Notice,
    Outgoing,
    Pace,
    Platform,
    Reply,
    Route,
    SentLedger,
    Zone,
    clean,
    render,
    show,
    unpaced,
    visible_counts,
)

CONSOLE_CHANNEL = ChannelRef(Platform("console"), "local", "console")
CHART_DIR = Path("tallybot-charts")
"""Where attachments are written by default (relative: in the current directory)."""
COLOURS = ("magenta", "cyan", "yellow", "green", "blue", "red")
LEDGER_HORIZON = 1000
"""Posts per channel whose printing the ledger remembers (beyond them, two days)."""
MAX_WIDTH = 80
"""Output wraps at 80 columns (or the terminal's width, if narrower)."""


def text(words: str, style: str = "") -> Text:
    """Words for the terminal, exactly as typed: no rich markup, no control characters."""
    return Text(clean(words), style=style)


class ConsoleAdapter(Adapter):
    platform = CONSOLE_CHANNEL.platform
    dedup_window = 0.0
    """A terminal cannot be read back; what was printed is kept in the sent ledger instead
    (``ledger``), so a restart does not print again a post whose record the outbox missed (only
    one cut off by a crash between printing and writing the ledger may be printed twice)."""

    def __init__(
        self,
        *,
        context: Context | None = None,
        out: IO[str] | None = None,
        rich: bool | None = None,
        limits: Limits = UNLIMITED,
        user: str = "console",
        save_dir: Path = CHART_DIR,
        zone: Zone = None,
        ledger: SentLedger | None = None,
    ) -> None:
        self.context = context
        self.ledger = ledger if ledger is not None or context is None else (
            context.sent_ledger(CONSOLE_CHANNEL.platform)
        )  # fmt: skip
        """What was printed, per channel and delivery key (None: no store, nothing kept)."""
        """Where typed commands go, with the console's admin policy (``attach``)."""
        self.limits = limits
        self.zone = zone
        self.save_dir = save_dir
        # file=None: Rich writes to whatever sys.stdout is at the time, so that output goes
        # above the prompt while one is shown (prompt_toolkit's patch_stdout).
        self.console = Console(
            file=out, force_terminal=rich, highlight=False, width=output_width(out)
        )
        self.rich = self.console.is_terminal
        self.console.soft_wrap = not self.rich  # plain text (a log, a pipe): lines stay whole
        self.user = user
        self._posted = 0

    def attach(self, context: Context) -> Self:
        """Take typed commands through ``context`` (for a console made before the bot)."""
        self.context = context
        return self

    async def serve(self) -> None:
        """The prompt, until the user quits; the bot stops then (``tallybot run``)."""
        ids: list[str] = []
        if self.context is not None and self.context.store is not None:
            viewer = self.context.request(CONSOLE_CHANNEL, self.user, self.user, "")
            ids = [c.id for c in await visible_counts(self.context.store, viewer)]
        await self.prompt(count_ids=ids)

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        if earlier is not None:
            return earlier.message_id
        known = None if self.ledger is None else await self.ledger.known(channel.channel, key)
        if known is not None and known.copies:
            return f"console-{known.copies[0].message}"  # printed before a restart
        async with pace(Route("print"), delivers=True):
            self.show(content)
            if attachment is not None:
                self.save(attachment)
        top = known.top if known is not None else None
        self._posted = max(self._posted, top or 0) + 1
        if self.ledger is not None:
            await self.ledger.posted(
                channel.channel, key, self._posted, silent=False, horizon=LEDGER_HORIZON
            )
        return f"console-{self._posted}"

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        async with pace(Route("print"), delivers=True):
            self.show(content)

    async def delete(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """What is printed stays printed: a line says the message counts as deleted."""
        async with pace(Route("print")):
            self.note(f"(message {message_id} withdrawn)")

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        if self.ledger is None:
            return {}  # what was printed cannot be read back
        found = {}
        for key in keys:
            known = await self.ledger.known(channel.channel, key)
            if known.copies:
                found[key] = Earlier(f"console-{known.copies[0].message}")
        return found

    def show(self, content: Outgoing) -> None:
        if isinstance(content, Notice):
            self.console.print(text(f"[admin] {content.text}", style="bold red"))
            return
        if not self.rich:
            self.console.print(Text(render(content, self.zone)))
            self.console.print()
            return
        self.console.print(panel(content, self.zone))

    def say(self, words: str) -> None:
        """A line as it is (the demo's banner)."""
        self.console.print(words)

    def note(self, words: str) -> None:
        """A narrator's line (the demo's notes on what happened)."""
        self.console.print(text(f"-- {words}", style="dim italic"))

    def show_reply(self, reply: Reply) -> None:
        if reply.message is not None and reply.ok:
            self.show(reply.message)
            if reply.text != reply.message.headline:
                self.console.print(Text(show(reply.body, self.zone)))
        else:
            style = "" if reply.ok else "bold red"
            self.console.print(Text(show(reply.body, self.zone), style=style))
        if reply.attachment is not None:
            self.save(reply.attachment)

    def save(self, attachment: Attachment) -> Path | None:
        """Write ``attachment`` into ``self.save_dir`` and print its path; None if it could not be
        written (the reason is printed instead, as for any failed command)."""
        path = (self.save_dir / Path(attachment.filename).name).absolute()
        try:
            self.save_dir.mkdir(parents=True, exist_ok=True)
            path.write_bytes(attachment.data)
        except OSError as exc:
            why = exc.strerror or str(exc)
            self.console.print(text(f"Could not save {path}: {why}", style="bold red"))
            return None
        self.console.print(text(f"Saved: {path}"))
        return path

    async def prompt(
        self,
        *,
        count_ids: Iterable[str] = (),
        input: Input | None = None,
        output: Output | None = None,
    ) -> None:
        """Take commands at the prompt (see ``adapters.console.prompt``) and show each reply,
        until quit, Ctrl-D or Ctrl-C."""
        context = self.context
        if context is None:
            raise RuntimeError("the console takes commands once attached to the bot (attach)")

        async def run(text: str) -> None:
            reply = await context.handle(
                context.request(CONSOLE_CHANNEL, self.user, self.user, text)
            )
            self.show_reply(reply)

        await read_commands(
            run, count_ids=count_ids, verbs=context.verbs, input=input, output=output
        )


def output_width(out: IO[str] | None) -> int:
    """80 columns, or fewer on a narrower terminal."""
    if out is not None:
        return MAX_WIDTH
    return min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns)


def panel(message: Message, zone: Zone = None) -> Panel:
    lead = message.leader_position
    colour = COLOURS[lead % len(COLOURS)] if lead is not None else "white"
    table = Table.grid(padding=(0, 2))
    for _ in range(5):
        table.add_column()
    for c in message.choices:
        style = f"bold {COLOURS[c.position % len(COLOURS)]}" if c.leading or c.winner else ""
        table.add_row(
            text(("✔ " if c.winner else "  ") + c.label, style=style),
            Text(c.votes_text, justify="right"),
            Text(c.share_text, justify="right"),
            Text(c.bar, style=COLOURS[c.position % len(COLOURS)]),
            text(c.note, style="dim"),
        )
    body = Group(
        text(message.headline, style="bold"),
        Text(""),
        table,
        Text(""),
        *(text(line) for line in message.lines),
        *(Text(show(note, zone)) for note in message.notes),
        Text(show(message.footer, zone), style="dim"),  # in the body, so it wraps, not cut
    )
    return Panel(
        body,
        title=text(message.title),
        border_style="bold " + colour if message.significant else colour,
    )
