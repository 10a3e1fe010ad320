"""kill -9 in a fan-out at the platforms' real limits, then a restart: what is lost, doubled, and
what the restart costs.

    python -m bench.crash [--channels 500] [--kill before during after] [--store URL]

The same run as ``tests/delivery/test_crash.py`` (``tests/delivery/crash_run.py``): a real bot
process fans one significant update out to N Discord and N Slack channels on the test fakes,
is killed with SIGKILL before the paced window (at its first request), during it (half the
channels served) or after it (all served), and is started again on the same store. Here the
fakes enforce, and the bot assumes, the real limits: Discord 50 requests/s; Slack 5
chat.postMessage/s (our assumption for the workspace), 1 per channel per second, and
conversations.history 50 a minute (Tier 3). ``--store`` takes an empty store's URL (a
PostgreSQL database, say); the default is a fresh SQLite file per run.

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

from tests.delivery.crash_run import REAL, crash_and_restart, fakes


async def one(kill: str, channels: int, store: str | None) -> str:
    kill_at = {"before": 0, "during": channels, "after": 2 * channels}[kill]
    with tempfile.TemporaryDirectory() as tmp:
        url = store or f"sqlite+aiosqlite:///{Path(tmp) / 'tallybot.sqlite3'}"
        discord_fake, slack_fake = fakes(REAL)
        async with discord_fake, slack_fake:
            figures = await crash_and_restart(
                discord_fake, slack_fake, url, Path(tmp),
                channels=channels, kill_at=kill_at, scale=REAL, limit=3600,
            )  # fmt: skip
    return f"{kill:<7} {figures.line()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=500)
    parser.add_argument(
        "--kill", nargs="+", choices=["before", "during", "after"],
        default=["before", "during", "after"],
    )  # fmt: skip
    parser.add_argument("--store", help="an empty store's URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    print(f"{args.channels} channels on Discord and on Slack, real limits", flush=True)
    for kill in args.kill:
        print(asyncio.run(one(kill, args.channels, args.store)), flush=True)


if __name__ == "__main__":
    main()
