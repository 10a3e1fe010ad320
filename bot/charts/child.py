"""The program of the process charts are drawn in: ``python -m bot.charts.child``.

Started by :class:`bot.charts.process.ChartProcess` the same way whatever started the bot (the
``tallybot`` console script, ``python -m bot``, a test), so it imports only what drawing needs.
It reads requests on its standard input and writes answers on its standard output, each a
frame: 8 bytes of length, then a pickle. A request is ``(render, count, history)`` (``render`` a
module-level function, sent by name); the answer is ``("ok", bytes)`` or ``("error", exc)``.
The first frame it writes says it is ready (matplotlib imported), with its pid.

A thread watches standard input the whole time, drawing or not: when it ends (the bot closed
it, or died, however it was killed) the child exits at once, so no chart process outlives its
bot. What drawing code prints goes to standard error, never among the answers.
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import threading
from typing import IO

HEADER = struct.Struct(">Q")
"""A frame's length."""


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame of ``stream``; None at its end."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def frame(value: object) -> bytes:
    """``value`` pickled, as one frame."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def _answer(request: bytes) -> bytes:
    try:
        render, count, history = pickle.loads(request)
        return frame(("ok", render(count, history)))
    except Exception as exc:  # the drawing's own error goes back as it is
        try:
            return frame(("error", exc))
        except Exception:  # an error that does not pickle: its words
            return frame(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def main() -> None:
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever drawing code prints goes to standard error
    waiting: queue.Queue[bytes] = queue.Queue()

    def watch() -> None:
        while (request := read_frame(requests)) is not None:
            waiting.put(request)
        os._exit(0)  # the bot has gone (or let the child go): stop, even mid-chart

    threading.Thread(target=watch, name="requests", daemon=True).start()
    import PIL.Image  # noqa: F401  (what drawing needs, imported before saying ready)

    import bot.domain.chart_figure  # noqa: F401

    answers.write(frame(("ready", os.getpid())))
    answers.flush()
    while True:
        answers.write(_answer(waiting.get()))
        answers.flush()


if __name__ == "__main__":
    main()
