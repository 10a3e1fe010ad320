"""Exactly once as users see it: kill -9 the bot in a 500-channel fan-out, start it again.

The bot runs as a real subprocess (``tallybot run``) against the fake Discord and the fake Slack
served by this test process (``crash_run``), on SQLite and on PostgreSQL. One significant
update is queued to 500 channels on each platform; the process is killed with SIGKILL before
the fan-out's paced window (at its first request), during it (half the channels served) and
after it (every channel served, the last outcomes perhaps not recorded), then started again
on the same store. Every channel must end with the message exactly once: Discord drops a
repeated send by its nonce; on Slack the bot finds its earlier posts by their message metadata,
one history read per channel in doubt. Only what was on its way at the kill is in doubt.

A count's final goes the same way with its chart. On Slack the chart is a step of its own (an
upload into the message's thread, at 100 a minute against the posts' 5 a second): the bot is
also killed in that chart phase (at the first chart shown, and with a fifth of them shown),
where a post is recorded as sent as soon as it is out, so again only what was on its way is in
doubt, and every channel ends with its message and its chart once each. The same holds for a
final posted into each subscription's thread (the ``thread`` option; Slack only): its chart is
a step of its own there too, uploaded into the thread once.

The fakes enforce the platforms' limits times ``SCALE`` and the bot is told the same
(``[discord.limits]``, ``[slack.limits]``), so that a fan-out takes seconds;
``bench/crash.py`` runs the same at the real limits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import PG_URL, _require_postgres
from tests.delivery.crash_run import crash_and_restart, fakes, fresh_postgres

pytestmark = pytest.mark.slow  # real processes, 1,000 deliveries a run

CHANNELS = 500
SCALE = 40
KILL_POINTS = {"before": 0, "during": CHANNELS, "after": 2 * CHANNELS}
"""Messages in the channels (of 2 x 500) when the bot is killed; 0: at its first request."""
CHART_KILLS = {"first chart": 1, "charts under way": CHANNELS // 5}
"""Slack charts shown when the bot is killed in a final's chart phase."""


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def crash_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A store URL of its own for the subprocess: a SQLite file, or a fresh PostgreSQL
    database (dropped afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
        return
    await _require_postgres()
    async with fresh_postgres(PG_URL) as url:
        yield url


@pytest.mark.timeout(90)
@pytest.mark.parametrize("kill", list(KILL_POINTS))
async def test_kill_9_in_a_500_channel_fan_out_then_restart_delivers_each_message_once(
    crash_store: str, tmp_path: Path, kill: str
) -> None:
    discord_fake, slack_fake = fakes(SCALE)
    async with discord_fake, slack_fake:
        figures = await crash_and_restart(
            discord_fake, slack_fake, crash_store, tmp_path,
            channels=CHANNELS, kill_at=KILL_POINTS[kill], scale=SCALE, limit=60,
        )  # fmt: skip
    print(f"\n{kill} ({crash_store.split(':')[0]}): {figures.line()}")
    if kill != "after":
        assert figures.killed_at < 2 * CHANNELS, "the fan-out finished before the kill"
    assert (figures.lost, figures.doubled) == (0, 0), figures.line()
    assert figures.http_429 == 0, figures.line()
    # What the restart cost beyond the posts still missing: only what was on its way.
    extra = figures.extra
    assert extra["slack posts"] == 0, figures.line()
    assert extra["slack reads"] <= figures.in_doubt["slack"], figures.line()
    assert extra["discord posts"] <= figures.in_doubt["discord"], figures.line()
    assert extra["discord reads"] == 0, figures.line()  # restarted within the nonce window
    # Noted only once a request's slot was granted: at most a window's worth in doubt.
    assert figures.in_doubt["slack"] <= 2 * 5 * SCALE, figures.line()
    assert figures.in_doubt["discord"] <= 2 * 50 * SCALE, figures.line()


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("kill", "where"), [*((k, "channel") for k in CHART_KILLS), ("charts under way", "thread")]
)
async def test_kill_9_in_a_slack_finals_chart_phase_leaves_only_what_was_on_its_way_in_doubt(
    crash_store: str, tmp_path: Path, kill: str, where: str
) -> None:
    """``where``: the final goes to the channel, or into each subscription's thread (the
    ``thread`` option), where its chart is a step of its own just the same."""
    discord_fake, slack_fake = fakes(SCALE)
    async with discord_fake, slack_fake:
        figures = await crash_and_restart(
            discord_fake, slack_fake, crash_store, tmp_path, channels=CHANNELS, kill_at=0,
            scale=SCALE, limit=120, final=True, charts_at=CHART_KILLS[kill],
            thread=where == "thread",
        )  # fmt: skip
    print(f"\nfinal, {kill}, {where} ({crash_store.split(':')[0]}): {figures.line()}")
    assert (figures.lost, figures.doubled) == (0, 0), figures.line()
    assert (figures.charts_lost, figures.charts_doubled) == (0, 0), figures.line()
    assert figures.http_429 == 0, figures.line()
    extra = figures.extra
    assert extra["slack posts"] == 0, figures.line()
    assert extra["slack reads"] <= figures.in_doubt["slack"], figures.line()
    # The posts made while their charts wait are sent, not in doubt: a window's worth at most.
    assert figures.in_doubt["slack"] <= 5 * SCALE, figures.line()
    assert figures.in_doubt["discord"] <= 2 * 50 * SCALE, figures.line()
