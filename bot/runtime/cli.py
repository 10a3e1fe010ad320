"""``tallybot`` (also ``python -m bot``): run, demo, check-config, replay, record, push, and the
subcommands platforms add (``invite``: Discord's install URL; ``bot.platform.CliCommand``).

The demo and replays are the console's by nature: they reach it through its plug-in
(``bot.platform.Plugin.terminal``), as the core reaches every platform.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from importlib import metadata, resources
from pathlib import Path
from typing import IO, TYPE_CHECKING

from bot.base.clock import Clock, Sleep, SystemClock
from bot.commands.request import Request
from bot.domain.subscription import Platform
from bot.errors import ConfigError, PushError, TallybotError
from bot.ingest.poller import PollResult
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.settings import ReplaySettings
from bot.ops import push_client
from bot.platform import CliCommand, Plugins, Terminal
from bot.runtime import logs, preflight
from bot.runtime.app import AdapterFactory, App
from bot.runtime.plugins import context
from bot.runtime.run import run_bot
from bot.settings import loader as config_mod
from bot.settings.loader import Admins, Config

if TYPE_CHECKING:  # the console's terminal types: prompt_toolkit loads only with the console
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

CONFIG_ENV = "TALLYBOT_CONFIG"
"""Where ``run`` finds its configuration when ``--config`` is not given (set in the image)."""


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
    """``cfg`` turned into a console replay: a throwaway store, replay sources, console alerts,
    and (with ``[web]``) the public pages on a free local port."""
    counts = []
    for cc in cfg.counts:
        if count_id is not None and cc.count.id != count_id:
            continue
        source = cc.source
        if isinstance(source, ReplaySettings):
            source = source.model_copy(update={"speed": speed})
        if timeline is not None:
            source = ReplaySettings(path=str(timeline.resolve()), speed=speed)
        counts.append(replace(cc, source=source))
    if not counts:
        raise ConfigError(f"{cfg.path}: no count {count_id!r}")
    plugin, terminal = Plugins.installed().terminal()
    return replace(
        cfg,
        store_url=f"sqlite+aiosqlite:///{store_dir / 'replay.sqlite3'}",
        counts=tuple(counts),
        admins=Admins(alerts=(terminal.channel,)),
        platforms={plugin.platform: plugin.settings.model_validate(terminal.replay_settings)},
        web=None
        if cfg.web is None
        else cfg.web.model_copy(update={"host": "127.0.0.1", "port": 0, "public_url": None}),
    )


async def play(
    cfg: Config,
    console: Terminal,
    *,
    clock: Clock | None = None,
    sleep: Sleep = asyncio.sleep,
    interactive: bool = False,
    prompt_input: Input | None = None,
    prompt_output: Output | None = None,
) -> None:
    """Replay every count of ``cfg`` (replay sources) to the console, then return.

    ``interactive``: commands are taken at the prompt meanwhile (``prompt_input`` and
    ``prompt_output``: the terminal's, unless given). When an admin's figures make the next
    recorded tally look like a decrease, the replay goes on with it as a correction (announced
    as one) instead of rejecting every tally after that. The final message carries the count's
    chart, which the console saves as a PNG file."""
    _, terminal = Plugins.installed().terminal()
    platform = terminal.channel.platform
    factories: dict[Platform, AdapterFactory] = {
        platform: lambda commands: console.attach(context(cfg, platform, commands))
    }
    async with App(cfg, factories, clock=clock, sleep=sleep, poll=False) as app:
        for cc in cfg.counts:
            reply = await app.commands.handle(
                Request(terminal.channel, "demo", "demo", f"subscribe {cc.count.id} all", home=True)
            )
            console.show_reply(reply)
            if app.web is not None and cc.public:
                console.note(f"Watch it in a browser too: {app.web.url}/c/{cc.count.id}")
        prompt = None
        if interactive:
            ids = [cc.count.id for cc in cfg.counts]
            prompt = asyncio.create_task(
                console.prompt(count_ids=ids, input=prompt_input, output=prompt_output)
            )
        try:
            for count_id, source in app.sources.items():
                assert isinstance(source, ReplaySource)
                while not source.done:
                    due = source.next_due()
                    if due:
                        await sleep(due)
                    result = await app.pollers[count_id].poll()
                    if result is PollResult.REJECTED and interactive:
                        await _carry_on(app, source, console)
                    if source.last_note:
                        console.note(source.last_note)
                    await app.idle()
        finally:
            if prompt is not None:
                prompt.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prompt


async def _carry_on(app: App, source: ReplaySource, console: Terminal) -> None:
    """The recorded tally just rejected (after an admin's figures), sent again as a correction."""
    tally = source.last_tally
    if tally is None:
        return
    console.note("The recording differs from the figures typed in: replaying it as a correction.")
    await app.pipeline.ingest(replace(tally, correction=True), actor="demo", action="correct")


async def run_demo(speed: float, out: IO[str] | None = None, interactive: bool = False) -> None:
    demo = config_mod.load(demo_config_path())
    console = Plugins.installed().terminal()[1].open(out, demo.timezone)
    console.say(
        "tallybot demo: the 2021 Amazon Bessemer union election count, replayed "
        f"at {speed:g}x. Messages appear as a subscribed channel would see them.\n"
    )
    if interactive and not sys.stdin.isatty():
        console.say("(--interactive needs a terminal on standard input: replaying only)")
        interactive = False
    with tempfile.TemporaryDirectory(prefix="tallybot-demo-") as tmp:
        cfg = replay_config(demo, Path(tmp), speed)
        await play(cfg, console, interactive=interactive)


def check_config(path: Path) -> Config:
    """Everything ``run`` would refuse, without connecting to anything (see
    bot.runtime.preflight)."""
    return preflight.load_checked(path)


def version() -> str:
    try:
        return metadata.version("tallybot")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tallybot", description="Live vote-count updates in Discord, Slack and Telegram."
    )
    parser.add_argument("--version", action="version", version=f"tallybot {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the bot with a configuration file")
    run.add_argument(
        "--config",
        type=Path,
        default=os.environ.get(CONFIG_ENV),
        help=f"the TOML configuration (default: ${CONFIG_ENV}; see config/example.toml)",
    )
    demo = sub.add_parser("demo", help="replay the Bessemer 2021 count on the console")
    demo.add_argument("--speed", type=float, default=1.0, help="replay speed (default 1: ~1 min)")
    demo.add_argument(
        "--interactive", action="store_true", help="also take commands typed at the prompt"
    )
    check = sub.add_parser(
        "check-config",
        help="check a configuration file as run would (every problem, nothing connected)",
    )
    check.add_argument("file", type=Path, help="the TOML configuration to check")
    doctor = sub.add_parser(
        "doctor",
        help="check, with the real tokens and without posting, what each platform would refuse "
        "(exit 1 on any problem)",
    )
    doctor.add_argument("--config", type=Path, required=True, help="the TOML configuration")
    replay = sub.add_parser("replay", help="replay a recorded timeline of a count on the console")
    replay.add_argument("timeline", type=Path, help="a JSON Lines timeline (see record)")
    replay.add_argument("--config", type=Path, required=True, help="where the count is defined")
    replay.add_argument("--count", required=True, help="the count id")
    replay.add_argument(
        "--speed", type=float, default=1.0, help="replay speed (default 1: as recorded)"
    )
    record = sub.add_parser(
        "record", help="poll one count's source and append each new tally to a timeline"
    )
    record.add_argument(
        "--config", type=Path, required=True, help="the TOML configuration defining the count"
    )
    record.add_argument("--count", required=True, help="the count id")
    record.add_argument("--out", type=Path, required=True, help="the timeline file to append to")
    add_push_parser(sub)
    for command in platform_commands().values():
        command.arguments(sub.add_parser(command.name, help=command.help))
    return parser


def platform_commands() -> dict[str, CliCommand]:
    """The subcommands the installed platforms add, by name."""
    plugins = Plugins.installed()
    return {c.name: c for name in plugins for c in plugins[name].commands}


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
    push.add_argument(
        "--state", choices=["counting", "paused", "final"], help="the count's state (optional)"
    )
    push.add_argument(
        "--correction", action="store_true", help="figures may go down or change a final count"
    )
    push.add_argument("--starts", help="when the count starts: 2021-04-08T13:00-05:00")
    push.add_argument("--resumes", help="when its pause ends: 2021-04-09T09:00-05:00")
    push.add_argument(
        "--remind-before", type=int, help="minutes before --starts/--resumes of the reminder"
    )
    push.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    push.add_argument("figures", nargs="*", help="yes=463 no=1100 [void=N challenged=N received=N]")


def push_body(args: argparse.Namespace) -> bytes:
    """The body ``tallybot push`` sends: the ``--json`` file as is, or the figures."""
    if args.json is not None:
        if args.figures or args.state or args.correction or args.starts or args.resumes:
            raise ConfigError(
                "give either --json FILE or figures (with --state, --correction, --resumes...)"
            )
        if str(args.json) == "-":
            return sys.stdin.buffer.read()
        try:
            return Path(args.json).read_bytes()
        except OSError as exc:
            raise ConfigError(f"{args.json}: {exc.strerror}") from exc
    given = {"starts": args.starts, "resumes": args.resumes, "remind_before": args.remind_before}
    schedule = {k: v for k, v in given.items() if v is not None}
    return push_client.figures_body(
        args.figures, state=args.state, correction=args.correction, schedule=schedule
    )


async def run_push(args: argparse.Namespace) -> int:
    from bot.settings.secrets import require

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


def log_setup(args: argparse.Namespace) -> contextlib.AbstractContextManager[logging.Handler]:
    """Structured logs on stderr for the command, scrubbed of every configured secret."""
    cfg = None
    if args.command in ("run", "record", "doctor") and args.config is not None:
        with contextlib.suppress(ConfigError):
            cfg = config_mod.load(args.config)  # its errors are reported by the command itself
    quiet = args.command in (
        "demo",
        "replay",
        "push",
        "check-config",
        "doctor",
        *platform_commands(),
    )
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
    except ConfigError as exc:
        for problem in exc.problems:  # one line each, every problem found
            print(f"tallybot: {problem}", file=sys.stderr)
        if len(exc.problems) > 1:
            print(f"tallybot: {len(exc.problems)} problems", file=sys.stderr)
        return 2
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
        print(f"{args.file}: OK ({preflight.summary(cfg)})")
    elif args.command == "doctor":
        from bot.ops import doctor as doctor_mod  # only this subcommand needs it

        status, lines = asyncio.run(doctor_mod.doctor(args.config))
        print("\n".join(lines))
        return status
    elif args.command == "run":
        if args.config is None:
            raise ConfigError(f"give --config FILE or set {CONFIG_ENV}")
        asyncio.run(run_bot(check_config(args.config)))
    elif args.command == "replay":
        if not args.timeline.exists():
            raise ConfigError(f"{args.timeline}: no such file")
        asyncio.run(run_replay(args.config, args.count, args.timeline, args.speed))
    elif args.command == "record":
        from bot.ingest.recording import record_count

        cfg = config_mod.load(args.config)
        written = asyncio.run(record_count(cfg, args.count, args.out))
        print(f"{written} tallies recorded in {args.out}")
    elif args.command == "push":
        return asyncio.run(run_push(args))
    elif args.command in (added := platform_commands()):
        return added[args.command].run(args)
    return 0


async def run_replay(config: Path, count_id: str, timeline: Path, speed: float) -> None:
    cfg = config_mod.load(config)
    with tempfile.TemporaryDirectory(prefix="tallybot-replay-") as tmp:
        replay = replay_config(cfg, Path(tmp), speed, count_id=count_id, timeline=timeline)
        await play(replay, Plugins.installed().terminal()[1].open(None, cfg.timezone))
