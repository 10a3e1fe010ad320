"""``tallybot`` (also ``python -m bot``): run, demo, check-config, replay, record."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import IO

from adapters.console import CONSOLE_CHANNEL, ConsoleAdapter
from bot import config as config_mod
from bot.app import AdapterFactory, App
from bot.clock import Clock, SystemClock
from bot.commands import Request
from bot.config import Config
from bot.errors import ConfigError, TallybotError
from bot.ratelimit import Sleep
from bot.sources.factory import build_source
from bot.sources.replay import ReplaySource
from bot.subscription import Platform


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
    """Replay every count of ``cfg`` (replay sources) to the console, then return."""
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
    console = ConsoleAdapter(out=out)
    console.console.print(
        "tallybot demo: the 2021 Amazon Bessemer union election count, replayed "
        f"at {speed:g}x. Messages appear as a subscribed channel would see them.\n"
    )
    with tempfile.TemporaryDirectory(prefix="tallybot-demo-") as tmp:
        cfg = replay_config(config_mod.load(demo_config_path()), Path(tmp), speed)
        await play(cfg, console, interactive=sys.stdin if interactive else None)


async def run_bot(cfg: Config) -> None:
    from adapters.registry import adapter_factories

    factories = adapter_factories(cfg)
    if not factories:
        raise ConfigError(f"{cfg.path}: no platform enabled: add [discord], [slack] or [console]")
    async with App(cfg, factories, clock=SystemClock()) as app:
        console = app.adapters.get(Platform.CONSOLE)
        if isinstance(console, ConsoleAdapter):
            await console.prompt(app.commands.handle)
        else:
            await asyncio.Event().wait()


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            asyncio.run(run_demo(args.speed, interactive=args.interactive))
        elif args.command == "check-config":
            cfg = check_config(args.file)
            print(f"{args.file}: OK ({len(cfg.counts)} counts)")
        elif args.command == "run":
            asyncio.run(run_bot(config_mod.load(args.config)))
        elif args.command == "replay":
            if not args.timeline.exists():
                raise ConfigError(f"{args.timeline}: no such file")
            asyncio.run(run_replay(args.config, args.count, args.timeline, args.speed))
        elif args.command == "record":
            from bot.recording import record_count

            asyncio.run(record_count(config_mod.load(args.config), args.count, args.out))
    except TallybotError as exc:
        print(f"tallybot: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


async def run_replay(config: Path, count_id: str, timeline: Path, speed: float) -> None:
    cfg = config_mod.load(config)
    with tempfile.TemporaryDirectory(prefix="tallybot-replay-") as tmp:
        replay = replay_config(cfg, Path(tmp), speed, count_id=count_id, timeline=timeline)
        await play(replay, ConsoleAdapter())
