"""``tallybot`` (also ``python -m bot``): run, demo, check-config, replay, record, push, invite."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import IO, Any

from adapters.console import CONSOLE_CHANNEL, ConsoleAdapter
from bot import config as config_mod
from bot import logs
from bot.app import AdapterFactory, App
from bot.clock import Clock, SystemClock
from bot.commands import Request
from bot.config import Config
from bot.errors import ConfigError, PushError, TallybotError
from bot.ops import invite as invite_mod
from bot.ops import push_client
from bot.ratelimit import Sleep
from bot.sources.factory import build_source
from bot.sources.replay import ReplaySource
from bot.subscription import Platform
from bot.words import count_of


def demo_config_path() -> Path:
    return Path(str(resources.files("bot") / "data" / "demo.toml"))


def replay_config(
    cfg: Config,
    store_dir: Path,
    speed: float,
    *,
    count_id: str | None = None,
    timeline: Path | None = None,
) -> Config:
    """``cfg`` turned into a console replay: a throwaway store, replay sources, console alerts."""
    counts = []
    for cc in cfg.counts:
        if count_id is not None and cc.count.id != count_id:
            continue
        source = dict(cc.source, speed=speed)
        if timeline is not None:
            source = {"kind": "replay", "path": str(timeline.resolve()), "speed": speed}
        counts.append(replace(cc, source=source))
    if not counts:
        raise ConfigError(f"{cfg.path}: no count {count_id!r}")
    return replace(
        cfg,
        store_url=f"sqlite+aiosqlite:///{store_dir / 'replay.sqlite3'}",
        counts=tuple(counts),
        admins=replace(cfg.admins, console=True, alerts=(CONSOLE_CHANNEL,)),
        console=True,
    )


async def play(
    cfg: Config,
    console: ConsoleAdapter,
    *,
    clock: Clock | None = None,
    sleep: Sleep = asyncio.sleep,
    interactive: IO[str] | None = None,
) -> None:
    """Replay every count of ``cfg`` (replay sources) to the console, then return.

    The final message carries the count's chart, which the console saves as a PNG file."""
    factories: dict[Platform, AdapterFactory] = {Platform.CONSOLE: lambda commands: console}
    async with App(cfg, factories, clock=clock, sleep=sleep, poll=False) as app:
        for cc in cfg.counts:
            reply = await app.commands.handle(
                Request(CONSOLE_CHANNEL, "demo", "demo", f"subscribe {cc.count.id} all")
            )
            console.show_reply(reply)
        prompt = None
        if interactive is not None:
            prompt = asyncio.create_task(console.prompt(app.commands.handle, interactive))
        try:
            for count_id, source in app.sources.items():
                assert isinstance(source, ReplaySource)
                while not source.done:
                    due = source.next_due()
                    if due:
                        await sleep(due)
                    await app.pollers[count_id].poll()
                    if source.last_note:
                        console.note(source.last_note)
                    await app.idle()
        finally:
            if prompt is not None:
                prompt.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prompt


async def run_demo(speed: float, out: IO[str] | None = None, interactive: bool = False) -> None:
    demo = config_mod.load(demo_config_path())
    console = ConsoleAdapter(out=out, zone=demo.timezone)
    console.console.print(
        "tallybot demo: the 2021 Amazon Bessemer union election count, replayed "
        f"at {speed:g}x. Messages appear as a subscribed channel would see them.\n"
    )
    with tempfile.TemporaryDirectory(prefix="tallybot-demo-") as tmp:
        cfg = replay_config(demo, Path(tmp), speed)
        await play(cfg, console, interactive=sys.stdin if interactive else None)


async def run_bot(cfg: Config) -> None:
    from adapters.registry import adapter_factories

    factories = adapter_factories(cfg)
    if not factories:
        raise ConfigError(f"{cfg.path}: no platform enabled: add [discord], [slack] or [console]")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # docker stop, Ctrl-C: close cleanly
        loop.add_signal_handler(sig, stop.set)
    async with App(cfg, factories, clock=SystemClock()) as app:
        console = app.adapters.get(Platform.CONSOLE)
        waits: list[asyncio.Task[Any]] = [asyncio.create_task(stop.wait())]
        if isinstance(console, ConsoleAdapter):
            waits.append(asyncio.create_task(console.prompt(app.commands.handle)))
        _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()


def check_config(path: Path) -> Config:
    """Load ``path`` and build every count's source, so that every key is checked."""
    cfg = config_mod.load(path)
    for i, cc in enumerate(cfg.counts):
        build_source(
            cc.count,
            cc.source,
            clock=SystemClock(),
            base_dir=cfg.base_dir,
            where=f"{path}: counts[{i}].source",
        )
    return cfg


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tallybot", description="Live vote-count updates in Discord and Slack."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the bot with a configuration file")
    run.add_argument("--config", type=Path, required=True, help="the TOML configuration")
    demo = sub.add_parser("demo", help="replay the Bessemer 2021 count on the console")
    demo.add_argument("--speed", type=float, default=1.0, help="replay speed (default 1: ~1 min)")
    demo.add_argument(
        "--interactive", action="store_true", help="also take commands typed at the prompt"
    )
    check = sub.add_parser("check-config", help="check a configuration file and exit")
    check.add_argument("file", type=Path)
    replay = sub.add_parser("replay", help="replay a recorded timeline of a count on the console")
    replay.add_argument("timeline", type=Path, help="a JSON Lines timeline (see record)")
    replay.add_argument("--config", type=Path, required=True, help="where the count is defined")
    replay.add_argument("--count", required=True, help="the count id")
    replay.add_argument("--speed", type=float, default=1.0)
    record = sub.add_parser(
        "record", help="poll one count's source and append each new tally to a timeline"
    )
    record.add_argument("--config", type=Path, required=True)
    record.add_argument("--count", required=True, help="the count id")
    record.add_argument("--out", type=Path, required=True, help="the timeline file to append to")
    add_push_parser(sub)
    inv = sub.add_parser("invite", help="print the Discord install URL (scopes, permissions)")
    inv.add_argument(
        "--client-id",
        default=None,
        help=f"the Discord application id (default: ${invite_mod.CLIENT_ID_ENV})",
    )
    return parser


def add_push_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    push = sub.add_parser(
        "push",
        help="send a signed tally to a running bot's push endpoint",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "exit codes: 0 accepted or no change; 1 rejected (e.g. a decrease without "
            "--correction);\n2 usage or configuration; 3 refused by the server (400, 401, 404, "
            "413, 422);\n4 no answer (unreachable, timed out, 5xx)"
        ),
    )
    push.add_argument("--url", required=True, help="the bot's server, e.g. http://127.0.0.1:8080")
    push.add_argument("--count", required=True, help="the count id")
    push.add_argument(
        "--secret-env",
        default="TALLYBOT_PUSH_SECRET",
        help="the environment variable holding the push secret (or NAME_FILE: a file path)",
    )
    push.add_argument("--json", type=Path, help="send this JSON file as the tally ('-': stdin)")
    push.add_argument("--state", choices=["counting", "paused", "final"])
    push.add_argument(
        "--correction", action="store_true", help="figures may go down or change a final count"
    )
    push.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    push.add_argument("figures", nargs="*", help="yes=463 no=1100 [void=N challenged=N received=N]")


def push_body(args: argparse.Namespace) -> bytes:
    """The body ``tallybot push`` sends: the ``--json`` file as is, or the figures."""
    if args.json is not None:
        if args.figures or args.state or args.correction:
            raise ConfigError("give either --json FILE or figures (with --state, --correction)")
        if str(args.json) == "-":
            return sys.stdin.buffer.read()
        try:
            return Path(args.json).read_bytes()
        except OSError as exc:
            raise ConfigError(f"{args.json}: {exc.strerror}") from exc
    return push_client.figures_body(args.figures, state=args.state, correction=args.correction)


async def run_push(args: argparse.Namespace) -> int:
    from bot.secrets import require

    body = push_body(args)
    secret = require(args.secret_env)
    answer = await push_client.push(
        args.url,
        args.count,
        body,
        secret.reveal(),
        now=SystemClock().now().timestamp(),
        within=args.timeout,
    )
    print(answer.line())
    return answer.exit_code


def invite_url(client_id: str | None) -> str:
    client_id = client_id or os.environ.get(invite_mod.CLIENT_ID_ENV)
    if not client_id:
        raise ConfigError(f"give --client-id or set {invite_mod.CLIENT_ID_ENV}")
    return invite_mod.invite_url(client_id)


def log_setup(args: argparse.Namespace) -> contextlib.AbstractContextManager[logging.Handler]:
    """Structured logs on stderr for the command, scrubbed of every configured secret."""
    cfg = None
    if args.command in ("run", "record"):
        with contextlib.suppress(ConfigError):
            cfg = config_mod.load(args.config)  # its errors are reported by the command itself
    quiet = args.command in ("demo", "replay", "push", "invite", "check-config")
    return logs.configured(
        secrets=logs.secret_values(cfg), level=logging.WARNING if quiet else logging.INFO
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with log_setup(args):
            return run_command(args)
    except PushError as exc:
        print(f"tallybot: {exc}", file=sys.stderr)
        return push_client.EXIT_UNAVAILABLE
    except TallybotError as exc:
        print(f"tallybot: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def run_command(args: argparse.Namespace) -> int:
    if args.command == "demo":
        asyncio.run(run_demo(args.speed, interactive=args.interactive))
    elif args.command == "check-config":
        cfg = check_config(args.file)
        print(f"{args.file}: OK ({count_of(len(cfg.counts), 'count')})")
    elif args.command == "run":
        asyncio.run(run_bot(config_mod.load(args.config)))
    elif args.command == "replay":
        if not args.timeline.exists():
            raise ConfigError(f"{args.timeline}: no such file")
        asyncio.run(run_replay(args.config, args.count, args.timeline, args.speed))
    elif args.command == "record":
        from bot.recording import record_count

        asyncio.run(record_count(config_mod.load(args.config), args.count, args.out))
    elif args.command == "push":
        return asyncio.run(run_push(args))
    elif args.command == "invite":
        print(invite_url(args.client_id))
    return 0


async def run_replay(config: Path, count_id: str, timeline: Path, speed: float) -> None:
    cfg = config_mod.load(config)
    with tempfile.TemporaryDirectory(prefix="tallybot-replay-") as tmp:
        replay = replay_config(cfg, Path(tmp), speed, count_id=count_id, timeline=timeline)
        await play(replay, ConsoleAdapter(zone=cfg.timezone))
