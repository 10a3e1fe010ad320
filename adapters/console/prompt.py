"""The console's prompt: prompt_toolkit's ``prompt_async``, made for asyncio.

Reading a line never blocks the event loop or a thread, so the bot stops at once whatever the
prompt is doing (the old ``readline`` in an executor thread held shutdown for up to 90 s). What a
console should have: a visible prompt (``tallybot> ``), history (up and down arrows), Tab
completion of the commands and of the count ids, ``quit`` (or Ctrl-D, or Ctrl-C) to stop, and
output printed above the prompt instead of through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.patch_stdout import patch_stdout

from bot.platform import VERBS, CountArg, Verbs

PROMPT = "tallybot> "
QUIT_WORDS = ("quit", "exit")
GREETING = "Type a command (help lists them; Tab completes), quit or Ctrl-D to stop."

Line = Callable[[str], Awaitable[None]]


class CommandCompleter(Completer):
    """Completes the first word from the commands, the second from the count ids."""

    def __init__(self, count_ids: Iterable[str], verbs: Verbs = VERBS) -> None:
        self.verbs = [*(spec.name for spec in verbs), *QUIT_WORDS]
        self.counted = {s.name for s in verbs if any(isinstance(a, CountArg) for a in s.args)}
        self.count_ids = list(count_ids)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        words = document.text_before_cursor.split(" ")
        current = words[-1]
        if len(words) == 1:
            options: Sequence[str] = self.verbs
        elif len(words) == 2 and words[0] in self.counted:
            options = self.count_ids
        else:
            options = ()
        for option in options:
            if option.startswith(current):
                yield Completion(option, start_position=-len(current))


async def read_commands(
    on_line: Line,
    *,
    count_ids: Iterable[str] = (),
    verbs: Verbs = VERBS,
    input: Input | None = None,
    output: Output | None = None,
) -> None:
    """Prompt for lines and hand each non-empty one to ``on_line`` until quit, Ctrl-D or Ctrl-C.

    ``input`` and ``output`` default to the terminal (tests pass a pipe and a dummy output).
    """
    session: PromptSession[str] = PromptSession(
        PROMPT,
        history=InMemoryHistory(),
        completer=CommandCompleter(count_ids, verbs),
        complete_while_typing=False,  # Tab completes, as in a shell
        input=input,
        output=output,
    )
    with patch_stdout(raw=True):
        print(GREETING)
        while True:
            try:
                line = await session.prompt_async(handle_sigint=False)
            except (EOFError, KeyboardInterrupt):  # Ctrl-D, Ctrl-C: the terminal's own keys
                return
            text = line.strip()
            if text.lower() in QUIT_WORDS:
                return
            if text:
                await on_line(text)
