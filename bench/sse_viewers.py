"""The viewers of ``bench/web_sse.py``: N Server-Sent Events streams held open by one process.

    python -m bench.sse_viewers URL N LAST TALLIES

Prints ``ready N`` once the streams are open, ``got SEQ`` once every stream has SEQ, and, when
its stdin closes, one JSON line: each seq's receipt times (CLOCK_MONOTONIC).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import sys
import time
from urllib.parse import urlsplit


class Stream(asyncio.Protocol):
    """One viewer, as cheap as a viewer can be: a socket, the request, and a scan of what
    arrives for complete events (``id: SEQ`` ... blank line), each timed when its last byte
    arrives. No HTTP client library: the viewers' CPU is not what is measured."""

    def __init__(self, request: bytes, crowd: Crowd) -> None:
        self.request = request
        self.crowd = crowd
        self.rest = b""
        self.opened = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        at = time.monotonic()
        data = self.rest + data
        end = data.rfind(b"\n\n")
        if end < 0:
            self.rest = data
            return
        self.rest = data[end + 2 :]
        if not self.opened and b"retry: " in data:
            self.opened = True
            self.crowd.opened()
        start = data.find(b"\nid: ")  # a field at the start of a line (each event is a chunk)
        while 0 <= start < end:
            stop = data.index(b"\n", start + 1)
            self.crowd.received(int(data[start + 5 : stop]), at)
            start = data.find(b"\nid: ", stop)

    def connection_lost(self, exc: Exception | None) -> None:
        self.crowd.closed += 1


class Crowd:
    """The viewers of one process: when each had each seq."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ready = 0
        self.closed = 0
        self.all_ready = asyncio.Event()
        self.got: dict[int, list[float]] = {}

    def opened(self) -> None:
        self.ready += 1
        if self.ready == self.n:
            self.all_ready.set()

    def received(self, seq: int, at: float) -> None:
        times = self.got.setdefault(seq, [])
        times.append(at)
        if len(times) == self.n:
            print(f"got {seq}", flush=True)


async def viewers(url: str, n: int, last: int, tallies: int) -> None:
    """Hold ``n`` streams open; print ``ready``, then ``got SEQ`` once every stream has SEQ,
    then (on stdin closing) one JSON line: each seq's receipt times."""
    raise_fd_limit()
    u = urlsplit(url)
    host, port = u.hostname or "127.0.0.1", u.port or 80
    request = (
        f"GET {u.path}?last={last} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    crowd = Crowd(n)
    loop = asyncio.get_running_loop()
    transports = []
    for start in range(0, n, 250):  # connect in waves, not in one burst
        made = await asyncio.gather(
            *(
                loop.create_connection(lambda: Stream(request, crowd), host, port)
                for _ in range(min(250, n - start))
            ),
            return_exceptions=True,
        )
        for m in made:
            if isinstance(m, BaseException):
                print(f"refused {m!r}", file=sys.stderr, flush=True)
            else:
                transports.append(m[0])
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(crowd.all_ready.wait(), 120)
    print(f"ready {crowd.ready}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)  # until the bot is done with us
    print(json.dumps({str(k): v for k, v in crowd.got.items()}), flush=True)
    for transport in transports:
        transport.abort()


def raise_fd_limit() -> None:
    """Open files up to the hard limit (each viewer is a socket)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main() -> None:
    url, n, last, tallies = sys.argv[1:5]
    asyncio.run(viewers(url, int(n), int(last), int(tallies)))


if __name__ == "__main__":
    main()
