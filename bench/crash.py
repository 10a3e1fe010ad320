"""kill -9 in a fan-out at the platforms' real limits, then a restart: what is lost, doubled, and
what the restart costs.

    python -m bench.crash [--channels 500] [--kill before discord during after] [--postgres URL]

The same run as ``tests/delivery/test_crash.py`` (``tests/delivery/crash_run.py``): a real bot
process fans one significant update out to N Discord and N Slack channels on the test fakes,
is killed with SIGKILL before the paced window (at its first request), during it (``discord``:
a quarter of the channels served, in Discord's window, which is ten times faster; ``during``:
half, in Slack's) or after it (all served), and is started again on the same store. Here the
fakes enforce, and the bot assumes, the real limits: Discord 50 requests/s; Slack 5
chat.postMessage/s (our assumption for the workspace), 1 per channel per second, and
conversations.history 50 a minute (Tier 3). The store is a fresh SQLite file per run, or with
``--postgres URL`` a fresh database on that server per run.

Printed per run: messages in the channels at the kill, deliveries in doubt (their request may
have gone out), lost, doubled, 429s, the restart's extra requests (repeated Discord posts that
its nonce dropped, channel reads, Slack posts beyond those still missing) and seconds from the
first start until every channel had the message.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
from pathlib import Path

from tests.delivery.crash_run import REAL, Figures, crash_and_restart, fakes, fresh_postgres

KILLS = ["before", "discord", "during", "after"]


async def one(kill: str, channels: int, postgres: str | None) -> str:
    kill_at = {"before": 0, "discord": channels // 2, "during": channels, "after": 2 * channels}
    with tempfile.TemporaryDirectory() as tmp:
        if postgres is None:
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'tallybot.sqlite3'}"
            figures = await run(url, Path(tmp), channels, kill_at[kill])
        else:
            async with fresh_postgres(postgres) as url:
                figures = await run(url, Path(tmp), channels, kill_at[kill])
    return f"{kill:<8} {figures.line()}"


async def run(url: str, tmp: Path, channels: int, kill_at: int) -> Figures:
    discord_fake, slack_fake = fakes(REAL)
    async with discord_fake, slack_fake:
        return await crash_and_restart(
            discord_fake, slack_fake, url, tmp,
            channels=channels, kill_at=kill_at, scale=REAL, limit=3600,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=500)
    parser.add_argument("--kill", nargs="+", choices=KILLS, default=KILLS)
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: SQLite files)")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    store = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{args.channels} channels on Discord and on Slack, real limits, {store}", flush=True)
    for kill in args.kill:
        print(asyncio.run(one(kill, args.channels, args.postgres)), flush=True)


if __name__ == "__main__":
    main()
