"""Webhook fan-out: one significant update to 1,000 webhook targets on loopback receivers
(``tests.fakes.webhook_fake``: a third each tallybot's signed JSON, Mattermost-style and
Teams-style), some slow, some failing for a while, some failing for good.

    python -m bench.webhook [--targets 1000] [--slow 50] [--flaky 50] [--broken 20]

The whole bot runs in this process (``App``, SQLite, the real dispatcher and pacer, the real
adapter through the egress guard), the receivers too. ``slow`` targets answer 3 s after taking
the post (real time; the timeout is 10 s); ``flaky`` ones answer 503 twice, then take it;
``broken`` ones answer 503 always and are disabled after ``disable_after`` (3 here) failures in
a row, the admins told (the ``ops`` target, the operator's ``[admins] alerts``).

Printed: seconds from the tally accepted to the outbox done (every delivery sent or given up),
the ideal the pacer allows (200 posts a second in all), requests, targets that got nothing
(lost: among those that should have got it) or more than one copy (doubled), targets
disabled, alerts told, peak RSS, and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from adapters.webhook.adapter import WebhookAdapter
from adapters.webhook.settings import env_name
from bot.domain.model import Tally
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryStatus
from bot.store.schema import outbox
from tests.adapters.rigs.webhook import plugins
from tests.fakes.webhook_fake import FakeReceivers

COUNT = {
    "id": "bessemer-2021",
    "title": "Amazon BHM1 union election, Bessemer AL",
    "tie_holder": "no",
    "received": 3215,
    "choices": [{"id": "yes", "label": "Yes (RWDSU)"}, {"id": "no", "label": "No union"}],
    "source": {"kind": "manual"},
}
TALLY = Tally("bessemer-2021", {"yes": 84, "no": 201}, datetime(2021, 4, 8, tzinfo=UTC), "bench")
KINDS = [("json", "json"), ("hooks", "slack"), ("workflows", "teams")]
OVERALL = 200.0
"""Posts a second in all (the ``posts`` bucket)."""


async def done(app: App, targets: int) -> bool:
    """Every target's delivery (and every alert) sent or given up."""
    async with app.db.connect() as conn:
        rows = (
            await conn.execute(select(outbox.c.status, func.count()).group_by(outbox.c.status))
        ).all()
    by: dict[str, int] = {status: n for status, n in rows}
    still = sum(by.get(s.value, 0) for s in (DeliveryStatus.PENDING, DeliveryStatus.SENDING))
    return still == 0 and sum(by.values()) >= targets


async def run(targets: int, slow: int, flaky: int, broken: int) -> dict[str, Any]:
    names = [f"t{i}" for i in range(targets)]
    kinds = {n: KINDS[i % 3] for i, n in enumerate(names)}
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeReceivers(now=time.time) as fake:
            every = [*kinds.items(), ("ops", ("json", "json"))]
            for name, (kind, _) in every:
                os.environ[env_name(name, "URL")] = fake.url(kind, name)
                if kind == "json":
                    os.environ[env_name(name, "SECRET")] = f"secret-of-{name}-for-the-bench"
                    fake.add_secret(name, f"secret-of-{name}-for-the-bench")
            for name in names[:slow]:
                fake.slow[name] = 3.0
            for name in names[slow : slow + flaky]:
                fake.fail_next(2, status=503, target=name)
            broke = names[slow + flaky : slow + flaky + broken]
            fake.broken.update(broke)
            raw = {
                "store": {"url": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"},
                "admins": {"alerts": ["webhook:operator/ops"]},
                "webhook": {
                    "allow_private_addresses": True,
                    "disable_after": 3,
                    "targets": [
                        {"name": n, "format": f}
                        for n, (_, f) in [*kinds.items(), ("ops", ("json", "json"))]
                    ],
                },
                "counts": [COUNT],
            }
            cfg = parse(raw, Path(tmp) / "bench.toml", plugins=plugins())
            async with App(cfg, adapter_factories(cfg), poll=False) as app:
                async with app.db.begin() as conn:
                    await count_rows.upsert(conn, cfg.counts[0].count)
                    for n in names:
                        ref = ChannelRef(Platform("webhook"), "operator", n)
                        await sub_rows.subscribe(
                            conn,
                            ref,
                            "bessemer-2021",
                            Mode.EVENTS,
                            by="bench",
                            at=datetime.now(UTC),
                        )
                await asyncio.sleep(1.5)
                start = time.perf_counter()
                await app.pipeline.ingest(TALLY)
                while not await done(app, targets):  # noqa: ASYNC110 (the store is polled)
                    await asyncio.sleep(0.2)
                seconds = time.perf_counter() - start
                adapter = app.adapters[Platform("webhook")]
                assert isinstance(adapter, WebhookAdapter)
                disabled = len(adapter.disabled)
            should = [n for n in names if n not in broke]
            shown = [len(fake.seen(n)) for n in should]
    return {
        "targets": targets,
        "slow": slow,
        "flaky": flaky,
        "broken": broken,
        "seconds": seconds,
        "ideal": targets / OVERALL,
        "requests": len(fake.r.arrived),
        "lost": sum(1 for c in shown if c == 0),
        "doubled": sum(1 for c in shown if c > 1),
        "broken got": sum(len(fake.seen(n)) for n in broke),
        "disabled": disabled,
        "alerts": len(fake.seen("ops")),
        "peak MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--flaky", type=int, default=50)
    parser.add_argument("--broken", type=int, default=20)
    a = parser.parse_args()
    load = os.getloadavg()
    r = asyncio.run(run(a.targets, a.slow, a.flaky, a.broken))
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for k, v in r.items():
        shown = (
            f"{v:.1f}"
            if isinstance(v, float)
            else (" ".join(f"{x:.2f}" for x in v) if isinstance(v, tuple) else v)
        )
        print(f"{k:>12}: {shown}")


if __name__ == "__main__":
    main()
