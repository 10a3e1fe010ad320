"""A fleet that fails over during a fan-out: instances started, killed and stopped while one
significant update goes out to 2,000 Discord channels, and slash commands keep coming.

    python -m bench.fleet [--channels 2000] [--commands 2000] [--postgres URL]

Real ``tallybot run`` processes (``tests/cluster/fleet.py``) on a fresh PostgreSQL database,
``claim_seconds = 3`` and ``shard_lease_seconds = 3``, against the Discord fake (served by this
process) enforcing Discord's 50 requests per second per bot and one session start per 5 s; the
bot has three shards, one guild on each. Three instances start and settle (a shard each); the
tally is pushed to the first; during the fan-out a fourth instance starts (``--start-at``), the
holder of the sending lease is killed with SIGKILL (``--kill-at``) and an instance that runs a
shard but does not send is stopped with SIGTERM (``--stop-at``: its shard is handed over), while
``--commands`` ``/count list`` arrive evenly spread over the fan-out, round robin over the three
guilds and many members.

Printed: the whole fan-out (seconds, ideal at 50/s, 429s, lost, doubled); after the takeover (the
first post that arrived after the kill, once the lease was taken over): the remaining channels'
seconds against their ideal, and their rate from 5 s after the takeover (target 45/s or more); the
seconds from the kill until the last of the channels the dead instance had claimed got its post
(target ``claim_seconds`` + 5 s); the commands unanswered, those sent while no session ran the
guild's shard (the kill's gap, unavoidable; with those sent only to the killed instance's sessions
in the 3 s before the kill, which it could not answer) apart from the others (the start, the stop's
hand-over: target 0), with when those were sent; the fake's overlapping sessions and refused
identifies; the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import tempfile
import time
from pathlib import Path

import aiohttp

from adapters.discord.delivery import DISCORD_LIMITS, GLOBAL
from bench.instances import complaints, load, until
from bot.delivery.pacing import Window
from bot.domain.subscription import Platform
from bot.ops.push_client import push
from bot.store import Database, leases, outbox
from tests.cluster.fleet import Fleet, Instance, start, stop_all, subscribe_all
from tests.conftest import PG_URL
from tests.delivery.crash_run import fresh_postgres, toml_value
from tests.fakes.discord_fake import FakeDiscord, FakeInteraction
from tests.fakes.slack_fake import FakeSlack

COUNT = "bessemer-2021"
SECRET = "bench-push-secret"
SHARDS = 3
CLAIM_S = 3.0
RATE = 50.0
MEMBERS = 100
"""Members per guild who send commands (each member's own limit is 8 in 20 s)."""
DISCORD = Platform("discord")
ACK_RTT_S = 0.05
"""The gateway's heartbeat ACKs a round trip late, as over a network (``GatewayHub.ack_delay_s``:
without one, discord.py on a busy machine logs "Can't keep up ... 41.3s behind")."""


def write_config(path: Path, store_url: str, d: FakeDiscord, guilds: list[int]) -> None:
    lines = [
        f"[store]\nurl = {toml_value(store_url)}",
        f"[cluster]\nclaim_seconds = {CLAIM_S:g}\nshard_lease_seconds = 3",
        "[server]\nport = 0",
        f"[discord]\napi_base = {toml_value(d.base_url)}",
        f"gateway_url = {toml_value(d.gateway_url)}",
        f"guilds = [{', '.join(map(str, guilds))}]",
        f"shard_count = {SHARDS}",
        f"[discord.limits]\nglobal = [{RATE:g}, 1.0]",
        "[[counts]]",
        f'id = "{COUNT}"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
        'tie_holder = "no"\nreceived = 3215',
        'choices = [{id = "yes", label = "Yes (RWDSU)"}, {id = "no", label = "No union"}]',
        'source = {kind = "manual"}',
    ]
    path.write_text("\n".join(lines) + "\n")


async def shards_of(http: aiohttp.ClientSession, fleet: Fleet) -> dict[str, list[int]]:
    """The shards each live instance says it runs (its sessions up)."""
    out: dict[str, list[int]] = {}
    for i in fleet.instances:
        if i.alive() and i.url:
            try:
                held = (await i.healthz(http))["instance"]
            except (aiohttp.ClientError, OSError):
                continue
            assert isinstance(held, dict)
            out[i.name] = list(held["shards"])
    return out


async def settle(
    http: aiohttp.ClientSession, fleet: Fleet, d: FakeDiscord, guilds: list[int]
) -> None:
    """Until every shard runs in exactly one live instance and each guild has one session."""
    while True:
        held = [s for shards in (await shards_of(http, fleet)).values() for s in shards]
        if sorted(held) == list(range(SHARDS)) and all(
            d.gateway.live_sessions(g) == 1 for g in guilds
        ):
            return
        await asyncio.sleep(0.2)


async def sending_holder(db: Database) -> str | None:
    async with db.connect() as conn:
        found = await leases.holders(conn, "send:discord")
    live = [holder for holder, _ in found.values()]
    return live[0] if live else None


async def claimed_channels(db: Database, name: str) -> set[int]:
    """The channels whose deliveries ``name`` has claimed (SENDING) now."""
    async with db.connect() as conn:
        doubtful = await outbox.in_doubt(conn, DISCORD)
    return {int(x.channel.channel) for x in doubtful if x.claimed_by == name}


class Commands:
    """``/count list`` sent evenly, round robin over the guilds and their members; each
    remembers whether a session ran its guild's shard when it was sent."""

    def __init__(self, d: FakeDiscord, places: list[tuple[int, int, list[int]]]) -> None:
        self.d = d
        self.places = places
        self.sent: list[tuple[FakeInteraction | None, bool]] = []
        self.at: list[tuple[float, int]] = []
        """When each was sent (monotonic) and its guild, in the order of ``sent``."""
        self.to: list[frozenset[str]] = []
        """The sessions each was sent to (their ids), in the order of ``sent``."""

    async def run(self, n: int, seconds: float) -> None:
        began = time.monotonic()
        sending: list[asyncio.Task[None]] = []
        for k in range(n):
            wait = began + k * seconds / n - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            guild, channel, members = self.places[k % len(self.places)]
            member = members[(k // len(self.places)) % len(members)]
            sending.append(asyncio.create_task(self._one(guild, channel, member)))
        await asyncio.gather(*sending)

    async def _one(self, guild: int, channel: int, member: int) -> None:
        served = self.d.gateway.live_sessions(guild) > 0
        sent_at = time.monotonic()
        to = frozenset(
            sid
            for sid, session in self.d.gateway.sessions.items()
            if session.covers(guild) and session.conn is not None and not session.conn.closing
        )
        before = len(self.d.interactions)  # the injection appends it before its first await
        try:
            async with asyncio.timeout(5):  # the fake's flush waits for every socket
                await self.d.inject_slash_command(
                    guild, channel, member, "count", [], subcommand="list"
                )
        except (RuntimeError, TimeoutError):  # RuntimeError: no session gets the guild's
            pass
        ix = self.d.interactions[before] if len(self.d.interactions) > before else None
        self.sent.append((ix, served))
        self.at.append((sent_at, guild))
        self.to.append(to)

    def killed_with(self, doomed: set[str], killed_at: float) -> None:
        """Count as sent without a session those sent only to the killed instance's sessions
        (``doomed``) in the 3 s before it was killed: it could not answer them."""
        sent = zip(self.sent, self.at, self.to, strict=True)
        for k, ((ix, served), (at, _), to) in enumerate(sent):
            if served and to and to <= doomed and killed_at - 3.0 <= at <= killed_at:
                self.sent[k] = (ix, False)

    def unanswered(self) -> tuple[int, int, int]:
        """Unanswered while the guild's shard had a session: never acknowledged, and
        acknowledged too late (Discord's 3 s: a busy machine); and those sent while it had
        none (or only the killed instance's, in the 3 s before the kill)."""
        missed = [(ix, served) for ix, served in self.sent if ix is None or ix.response is None]
        late = sum(1 for ix, served in missed if served and ix is not None and ix.callbacks)
        never = sum(1 for _, served in missed if served) - late
        return never, late, sum(1 for _, served in missed if not served)

    def never_at(self, began: float) -> list[str]:
        """When those never acknowledged while served were sent (s after the push), and to
        which guild (its index): where to look in the instances' logs."""
        guilds = [g for g, _, _ in self.places]
        return [
            f"{at - began:.1f}s/g{guilds.index(guild)}"
            for (ix, served), (at, guild) in zip(self.sent, self.at, strict=True)
            if served and (ix is None or not ix.callbacks)
        ]


async def run(args: argparse.Namespace) -> None:
    d = FakeDiscord(recommended_shards=SHARDS, max_concurrency=1, identify_clock=time.monotonic)
    d.gateway.ack_delay_s = ACK_RTT_S
    async with d, FakeSlack() as s, fresh_postgres(args.postgres) as url:
        guilds = [d.add_guild(f"shard {n}", shard=(n, SHARDS)) for n in range(SHARDS)]
        places = []
        for n, g in enumerate(guilds):
            members = [10_000 + n * MEMBERS + m for m in range(MEMBERS)]
            for m in members:
                d.add_member(g, m, f"member-{m}")
            places.append((g, d.add_channel(g, "results"), members))
        chans = [d.add_channel(guilds[0], f"count-{i}") for i in range(args.channels)]
        fleet = Fleet(d, s, url, guilds[0], chans, [])
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            tmp = args.logs or tmp
            config = Path(tmp) / "tallybot.toml"
            write_config(config, url, d, guilds)
            await subscribe_all(fleet)
            commands = Commands(d, places)
            try:
                fleet.db = await Database(url).__aenter__()
                await start(fleet, config, Path(tmp), 3, limit=180)
                note("three instances ready")
                async with aiohttp.ClientSession() as http:
                    async with asyncio.timeout(180):
                        await settle(http, fleet, d, guilds)
                    note("settled: a shard each")
                    await asyncio.sleep(2.0)  # past the start-ups' windows
                    load_before = load()
                    base_429, base_overlaps = d.count_429, d.gateway.overlaps
                    ideal_all = (args.channels - 1) / RATE
                    began = time.monotonic()
                    news = json.dumps({"votes": {"yes": 84, "no": 201}}).encode()
                    answer = await push(
                        fleet.instances[0].url, COUNT, news, SECRET, now=time.time()
                    )
                    assert answer.exit_code == 0, answer
                    asking = asyncio.create_task(commands.run(args.commands, ideal_all * 1.1))
                    events = asyncio.create_task(
                        disturb(args, fleet, config, Path(tmp), http, began)
                    )
                    await until(lambda: fleet.on_d() == args.channels, 300)
                    note("every channel has its post")
                    killed, victim_chans, stopped = await events
                    await asking
                    await asyncio.sleep(4.0)  # the last commands' answers
                    load_after = load()
            finally:
                await stop_all(fleet)
                if fleet.db is not None:
                    await fleet.db.aclose()
            logged = complaints(fleet)
            # inside the folder's life: the report reads the killed instance's log
            report(args, fleet, d, commands, began, killed, victim_chans, stopped,
                   d.count_429 - base_429, d.gateway.overlaps - base_overlaps, load_before,
                   load_after, logged)  # fmt: skip


async def disturb(
    args: argparse.Namespace,
    fleet: Fleet,
    config: Path,
    tmp: Path,
    http: aiohttp.ClientSession,
    began: float,
) -> tuple[tuple[float, str], set[int], str]:
    """Start one, kill the sending holder, stop a shard's holder that does not send."""
    db = fleet.store()
    await asyncio.sleep(max(0.0, began + args.start_at - time.monotonic()))
    joining = asyncio.create_task(start(fleet, config, tmp, 1, limit=180))
    note("a fourth instance starting")
    await asyncio.sleep(max(0.0, began + args.kill_at - time.monotonic()))
    for _ in range(400):  # the first holder may not have taken the lease yet
        holder = await sending_holder(db)
        if holder is not None:
            break
        await asyncio.sleep(0.05)
    victim = next(i for i in fleet.instances if i.name == holder)
    claimed = await claimed_channels(db, victim.name)
    await fleet.kill(victim)
    killed = (time.monotonic(), victim.name)
    note(f"killed {victim.name}, the holder")
    await joining
    await asyncio.sleep(max(0.0, began + args.stop_at - time.monotonic()))
    holder = await sending_holder(db)
    held = await shards_of(http, fleet)
    others = [i for i in fleet.instances if i.alive() and i.name != holder]
    # one that runs a shard, if any shows one now (a busy machine: sessions may be coming up)
    quitter: Instance = next((i for i in others if held.get(i.name)), others[0])
    quitter.proc.send_signal(signal.SIGTERM)
    note(f"stopping {quitter.name}")
    async with asyncio.timeout(30):
        await quitter.proc.wait()
    return killed, claimed, f"{quitter.name} (shards {held.get(quitter.name, [])})"


def note(what: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {what}", flush=True)


def report(
    args: argparse.Namespace,
    fleet: Fleet,
    d: FakeDiscord,
    commands: Commands,
    began: float,
    killed: tuple[float, str],
    victim_chans: set[int],
    stopped: str,
    n429: int,
    overlaps: int,
    load_before: str,
    load_after: str,
    logged: list[str],
) -> None:
    posts = sorted(
        (r.time, int(r.path.split("/")[2]))
        for r in d.requests
        if r.method == "POST" and r.path.endswith("/messages") and 200 <= r.status < 300
        and r.time >= began and int(r.path.split("/")[2]) in set(fleet.d_chans)
    )  # fmt: skip
    at_kill, victim = killed
    copies = fleet.copies()
    last = posts[-1][0]
    ideal_all = (args.channels - 1) / RATE
    held = DISCORD_LIMITS.with_windows({GLOBAL: Window(int(RATE), 1.0)}).for_holder()
    paces = held.named()[GLOBAL].window.limit
    print(f"limits: Discord {RATE:g}/s (the holder paces {paces}), claim_seconds {CLAIM_S:g}, "
          f"shard_lease_seconds 3; {SHARDS} shards, max_concurrency 1")  # fmt: skip
    lost, doubled = sum(1 for c in copies if c == 0), sum(1 for c in copies if c > 1)
    took_all = last - began
    print(f"fan-out of {args.channels:,}: {took_all:.1f} s (ideal {ideal_all:.1f} s, "
          f"{took_all / ideal_all:.3f}x); 429s {n429}; lost {lost}; doubled {doubled}")  # fmt: skip
    after = [t for t, _ in posts if t > at_kill + 0.05]
    if after:
        taken = after[0]
        rest = len(after)
        ideal = (rest - 1) / RATE
        later = [t for t in after if t >= taken + 5.0]
        rate = (len(later) - 1) / (later[-1] - later[0]) if len(later) > 1 else 0.0
        first5 = sum(1 for t in after if t < taken + 5.0)
        took = after[-1] - taken
        print(f"kill -9 of the holder {victim} at {at_kill - began:.1f} s; first post after it "
              f"{taken - at_kill:.2f} s later (the takeover); the {rest:,} remaining: "
              f"{took:.1f} s (ideal {ideal:.1f} s, {took / max(ideal, 1e-9):.3f}x); "
              f"{first5} in the first 5 s, then {rate:.1f}/s (target >= 45/s)")  # fmt: skip
    theirs = [t for t, c in posts if c in victim_chans and t > at_kill]
    if victim_chans:
        worst = max(theirs) - at_kill if theirs else float("nan")
        print(f"the {len(victim_chans)} channels {victim} had claimed: delivered "
              f"{worst:.1f} s after the kill (target {CLAIM_S + 5:g} s)")  # fmt: skip
    commands.killed_with(sessions_of(fleet, victim), at_kill)
    never, late, without = commands.unanswered()
    gap = sum(1 for _, served in commands.sent if not served)
    print(f"commands: {len(commands.sent):,} sent; unanswered while their shard had a session "
          f"(the start of i3, the stop of {stopped}): {never} never acknowledged (target 0), "
          f"{late} acknowledged too late (over 3 s); {without} of {gap} sent while it had none "
          f"(the kill's gap, and those the killed instance had in the 3 s before)")  # fmt: skip
    if never:
        print(f"never acknowledged, sent at (after the push/guild): "
              f"{' '.join(commands.never_at(began)[:40])}")  # fmt: skip
    print(f"sessions overlapping in hand-overs: {overlaps}; identifies refused: "
          f"{d.gateway.identify_refused}")  # fmt: skip
    print(f"{load_before} before, {load_after} after")
    for line in logged:
        print(line)


def sessions_of(fleet: Fleet, name: str) -> set[str]:
    """The gateway sessions instance ``name`` started (from discord.py's lines in its log)."""
    found: set[str] = set()
    for i in fleet.instances:
        if i.name == name:
            for line in i.log.read_text().splitlines():
                if "(Session ID: " in line:
                    found.add(line.split("(Session ID: ")[1].split(")")[0])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=2000)
    parser.add_argument("--commands", type=int, default=2000)
    parser.add_argument("--start-at", type=float, default=3.0, help="s after the push")
    parser.add_argument("--kill-at", type=float, default=10.0, help="s after the push")
    parser.add_argument("--stop-at", type=float, default=24.0, help="s after the push")
    parser.add_argument("--postgres", default=PG_URL)
    parser.add_argument("--logs", default="", help="keep the instances' logs in this folder")
    args = parser.parse_args()
    os.environ["TALLYBOT_PUSH_SECRET"] = SECRET  # the instances take pushes
    if args.logs:
        Path(args.logs).mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
