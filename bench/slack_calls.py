"""Slack Web API calls: TCP connections and CPU per post, through the real adapter.

    python -m bench.slack_calls [--posts 200]

The Slack adapter (slack_bolt / slack_sdk, Socket Mode) posts ``--posts`` notices, one after
another, to a channel of ``tests.fakes.slack_fake`` on loopback (its per-channel limit raised so
that no post waits). Printed: the TCP connections the Web API calls came on (counted at the
fake: one, kept alive, since the adapter holds one HTTP session for its life; one a call before),
the CPU of this process (the adapter and the fake, user + system) per post, and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
from pathlib import Path
from tempfile import TemporaryDirectory

from adapters.slack.adapter import SlackAdapter
from bot.domain.message import Notice
from bot.domain.subscription import ChannelRef, Platform
from bot.settings.loader import parse
from bot.settings.secrets import Secret
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import bare_context


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run(posts: int, tmp: Path) -> None:
    async with FakeSlack(post_burst=posts + 1) as fake:
        channel = fake.add_channel("news")
        cfg = parse({"slack": {"api_base": fake.api_url, "port": 0}}, tmp / "tallybot.toml")
        secrets = {
            "SLACK_BOT_TOKEN": Secret("SLACK_BOT_TOKEN", fake.bot_token),
            "SLACK_APP_TOKEN": Secret("SLACK_APP_TOKEN", fake.app_token),
        }
        ref = ChannelRef(Platform("slack"), fake.team_id, channel)
        async with SlackAdapter(cfg.settings("slack"), bare_context(secrets=secrets)) as adapter:
            await adapter.post(ref, Notice("warm-up"), key="tb0")  # imports, first connection
            start = cpu_seconds()
            for n in range(1, posts + 1):
                await adapter.post(ref, Notice(f"update {n}"), key=f"tb{n}")
            spent = cpu_seconds() - start
        print(f"posts {posts}, Web API calls {len(fake.calls)}")
        print(f"TCP connections {fake.api_connections}")
        print(f"CPU per post {spent / posts * 1000:.2f} ms (adapter and fake, user + system)")
        print("load " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=200)
    args = parser.parse_args()
    with TemporaryDirectory() as tmp:
        asyncio.run(run(args.posts, Path(tmp)))


if __name__ == "__main__":
    main()
