"""The console adapter: a terminal is one channel; messages are printed, commands typed.

Rich formatting (colours, a panel per message) where the output is a terminal; plain text
otherwise, so that the demo reads the same in a log. Lines typed at the prompt are commands,
exactly as on Discord or Slack (``status``, ``update bessemer-2021 no=1200``, ...). A file that
comes with a reply (the PNG of ``chart``) or with a message (the chart of a final tally) is
written into a folder, ``tallybot-charts/`` in the current directory unless told otherwise, and
its path printed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Collection
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bot.adapter import Attachment, Earlier, Notice, Outgoing
from bot.commands import Reply, Request
from bot.message import Message
from bot.pacing import UNLIMITED, Limits, Pace, Route, unpaced
from bot.render_text import render
from bot.subscription import ChannelRef, Platform

CONSOLE_CHANNEL = ChannelRef(Platform.CONSOLE, "local", "console")
CHART_DIR = Path("tallybot-charts")
"""Where attachments are written by default (relative: in the current directory)."""
COLOURS = ("magenta", "cyan", "yellow", "green", "blue", "red")

Handler = Callable[[Request], Awaitable[Reply]]


class ConsoleAdapter:
    platform = Platform.CONSOLE
    dedup_window = 0.0
    """A terminal cannot be read back: a line cut off by a crash may be printed again."""

    def __init__(
        self,
        *,
        out: IO[str] | None = None,
        rich: bool | None = None,
        limits: Limits = UNLIMITED,
        user: str = "console",
        save_dir: Path = CHART_DIR,
    ) -> None:
        self.limits = limits
        self.save_dir = save_dir
        stream = out if out is not None else sys.stdout
        self.console = Console(file=stream, force_terminal=rich, highlight=False, soft_wrap=True)
        self.rich = self.console.is_terminal
        self.user = user
        self._posted = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

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
        async with pace(Route("print"), delivers=True):
            self.show(content)
            if attachment is not None:
                self.save(attachment)
        self._posted += 1
        return f"console-{self._posted}"

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        async with pace(Route("print"), delivers=True):
            self.show(content)

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        return {}  # what was printed cannot be read back

    def show(self, content: Outgoing) -> None:
        if isinstance(content, Notice):
            self.console.print(Text(f"[admin] {content.text}", style="bold red"))
            return
        if not self.rich:
            self.console.print(Text(render(content)))
            self.console.print()
            return
        self.console.print(panel(content))

    def note(self, text: str) -> None:
        """A narrator's line (the demo's notes on what happened)."""
        self.console.print(Text(f"-- {text}", style="dim italic"))

    def show_reply(self, reply: Reply) -> None:
        if reply.message is not None and reply.ok:
            self.show(reply.message)
            if reply.text != reply.message.headline:
                self.console.print(Text(reply.text))
        else:
            self.console.print(Text(reply.text, style="" if reply.ok else "bold red"))
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
            self.console.print(Text(f"Could not save {path}: {why}", style="bold red"))
            return None
        self.console.print(Text(f"Saved: {path}"))
        return path

    async def prompt(self, handle: Handler, stdin: IO[str] | None = None) -> None:
        """Read commands line by line until end of input, and show each reply."""
        source = stdin if stdin is not None else sys.stdin
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, source.readline)
            if not line:
                return
            if not line.strip():
                continue
            reply = await handle(
                Request(CONSOLE_CHANNEL, self.user, self.user, line.strip(), platform_admin=True)
            )
            self.show_reply(reply)


def panel(message: Message) -> Panel:
    lead = message.leader_position
    colour = COLOURS[lead % len(COLOURS)] if lead is not None else "white"
    table = Table.grid(padding=(0, 2))
    for _ in range(5):
        table.add_column()
    for c in message.choices:
        style = f"bold {COLOURS[c.position % len(COLOURS)]}" if c.leading or c.winner else ""
        table.add_row(
            Text(("✔ " if c.winner else "  ") + c.label, style=style),
            Text(c.votes_text, justify="right"),
            Text(c.share_text, justify="right"),
            Text(c.bar, style=COLOURS[c.position % len(COLOURS)]),
            Text(c.note, style="dim"),
        )
    body = Group(
        Text(message.headline, style="bold"),
        Text(""),
        table,
        Text(""),
        *(Text(line) for line in message.lines),
    )
    return Panel(
        body,
        title=Text(message.title),
        subtitle=Text(message.footer, style="dim"),
        border_style="bold " + colour if message.significant else colour,
    )
