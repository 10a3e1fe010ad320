"""``tallybot run``: serve until told to stop, and stop within seconds whatever is going on.

SIGTERM (``docker stop``) and SIGINT (Ctrl-C) cancel the serving task wherever it waits (a
poll, a send, the console's prompt, the start itself); leaving the ``App`` then closes
everything in order. What has not closed after ``STOP_GRACE`` seconds is cancelled again and
abandoned, so the process is gone within the 10 s a container runtime waits by default. Most
of that is for the commands acknowledged just before the signal: each is carried out and
answered before the store closes (``bot.commands.inflight``, ``GRACE_S``); with none, the bot
stops in well under the 5 s an operator should have to wait. A bot never stops because its
input ended: without a terminal the console adapter stays off (``bot.runtime.plugins``) and the bot
serves until signalled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from bot.base.clock import SystemClock
from bot.base.memory import keep_start_up
from bot.commands.inflight import GRACE_S
from bot.domain.subscription import Platform
from bot.errors import ConfigError, StoreError
from bot.runtime.app import AdapterFactory, App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import Config, load

log = logging.getLogger(__name__)

STOP_GRACE = GRACE_S + 2.5
"""Seconds the orderly close may take after a signal before what is left is cancelled: the
commands' grace, then the closing itself (of which the store's waits for the blocks still under
way take at most ``CLOSE_WAIT_S + CANCEL_WAIT_S``, 1.5 s: ``bot.store.db``)."""
SIGNALS = (signal.SIGTERM, signal.SIGINT)
P = ParamSpec("P")
T = TypeVar("T")


class DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """The event loop's executor for ``run``: each call on a daemon thread of its own.

    A thread stuck in a call (a DNS lookup of an unreachable feed takes its resolver's timeout)
    then holds up neither the loop's shutdown nor the interpreter's exit, which both wait for a
    ``ThreadPoolExecutor``'s threads. At most ``max_workers`` calls run at once. (A
    ``ThreadPoolExecutor`` only because asyncio accepts nothing else; its own pool is unused.)
    """

    def __init__(self, max_workers: int = 8) -> None:
        super().__init__(max_workers=1)
        self._slots = threading.BoundedSemaphore(max_workers)
        self._closed = False

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        if self._closed:
            raise RuntimeError("cannot schedule new calls after shutdown")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def work() -> None:
            with self._slots:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)

        threading.Thread(target=work, name="tallybot-call", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more calls; never waits for the running ones (see the class docstring)."""
        self._closed = True


async def run_bot(cfg: Config, *, terminal: bool | None = None) -> None:
    """Run ``cfg`` until a signal (or the console's ``quit``); ``terminal``: whether standard
    input is a terminal (default: ask it)."""
    if terminal is None:
        terminal = sys.stdin.isatty()
    factories = adapter_factories(cfg, terminal=terminal)
    loop = asyncio.get_running_loop()
    loop.set_default_executor(DaemonExecutor())
    signalled = asyncio.Event()
    for sig in SIGNALS:
        loop.add_signal_handler(sig, signalled.set)
    try:
        await _serve_until(signalled, cfg, factories)
    finally:
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)


async def _serve_until(
    signalled: asyncio.Event, cfg: Config, factories: dict[Platform, AdapterFactory]
) -> None:
    serving = asyncio.create_task(serve(cfg, factories), name="serve")
    waiting = asyncio.create_task(signalled.wait(), name="signal")
    await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if serving.done():
        serving.result()  # its error, if it failed
        return
    log.info("signal received: stopping")
    started = asyncio.get_running_loop().time()
    serving.cancel()
    await asyncio.wait({serving}, timeout=STOP_GRACE)
    if not serving.done():
        log.warning("not closed after %.0f s: stopping anyway", STOP_GRACE)
        serving.cancel()
        await asyncio.wait({serving}, timeout=1.0)
    elif not serving.cancelled() and serving.exception() is not None:
        log.error("error while stopping", exc_info=serving.exception())
    took = asyncio.get_running_loop().time() - started
    log.info("stopped in %.2f s", took, extra={"seconds": round(took, 3)})


async def serve(cfg: Config, factories: dict[Platform, AdapterFactory]) -> None:
    """Run the bot until cancelled, or until an adapter's foreground ends (``Adapter.serve``:
    the console's user quits)."""
    loop = asyncio.get_running_loop()
    up: list[App] = []
    reloads: set[asyncio.Task[None]] = set()
    one_at_a_time = asyncio.Lock()  # two quick SIGHUPs reconcile one after the other

    def hangup() -> None:
        if not up:
            log.warning("SIGHUP while starting: nothing reloaded")
            return
        task = loop.create_task(reload(up[0], cfg.path, one_at_a_time), name="reload")
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    loop.add_signal_handler(signal.SIGHUP, hangup)  # before anything starts: never the default
    try:
        async with App(cfg, factories, clock=SystemClock()) as app:
            up.append(app)
            keep_start_up()
            await _serve_app(app)
    finally:
        loop.remove_signal_handler(signal.SIGHUP)


async def reload(app: App, path: Path, lock: asyncio.Lock) -> None:
    """SIGHUP: read the configuration file again and bring its counts into the store
    (``App.reload``); a file that does not load, or a store that fails meanwhile, changes
    nothing, and the log says why (this runs as a task of its own: nothing else would)."""
    async with lock:
        try:
            cfg = load(path)
        except ConfigError as exc:
            log.error("SIGHUP: the configuration file was not reloaded: %s", exc)
            return
        log.info("SIGHUP: reloading the counts of %s", path)
        try:
            await app.reload(cfg)
        except StoreError as exc:
            log.error("SIGHUP: the counts were not reloaded: %s", exc)


async def _serve_app(app: App) -> None:
    """Until an adapter's foreground ends (the console's user quits) or cancelled."""
    tasks = {
        asyncio.create_task(adapter.serve(), name=f"serve-{platform}"): platform
        for platform, adapter in app.adapters.items()
    }
    if not tasks:
        await asyncio.Event().wait()  # until cancelled by a signal
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        task.result()  # its error, if it failed
        log.info("%s closed: stopping", tasks[task])
