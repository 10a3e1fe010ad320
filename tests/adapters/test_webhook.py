"""The webhook plug-in beyond the contract: the three receivers (tallybot's JSON, Mattermost,
Teams) each get every update once through a lost answer and a kill; signatures; a 4xx, a
redirect and a private address are not retried; a target that keeps failing is disabled and
the admins told once; the operator's table subscribes its targets; text pings nobody."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from adapters.webhook.formats import json_body
from adapters.webhook.plugin import PLUGIN
from adapters.webhook.settings import WebhookSettings
from bot.domain.message import Attachment, Notice
from bot.domain.subscription import Mode
from bot.errors import ConfigError, PermanentDeliveryError
from bot.platform import Plugins
from bot.settings.loader import parse
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryStatus
from tests.adapters.contract import SENT_FAILS, deliveries, ingest, subscribe, times_shown
from tests.adapters.rigs.webhook import WebhookRig, plugins
from tests.hostile import typed

KINDS = {"newsroom": "json", "mattermost": "hooks", "teams": "workflows"}


def rig(**table: object) -> WebhookRig:
    return WebhookRig(dict(KINDS), **table)


def requests_with(r: WebhookRig, target: str) -> list[str]:
    """The idempotency keys of the requests ``target`` took (a repeat included)."""
    return [key for _, t, key in r.fake.r.requests if t == target]


async def test_each_receiver_gets_each_update_once_through_a_lost_answer(tmp_path: Path) -> None:
    r = rig()
    async with r.run(tmp_path):
        targets = [r.channel(t) for t in KINDS]
        await subscribe(r, *targets)
        for t in KINDS:
            r.fake.lose_answer(t)
        first = await ingest(r, 84, 201)
        await r.settle()
        final = await ingest(r, 738, 1798, final=True)
        await r.settle()
        sent = await deliveries(r)
    for channel in targets:
        assert [times_shown(r, channel, m.headline) for m in (first, final)] == [1, 1]
        keys = requests_with(r, channel.channel)
        assert len(keys) == 3
        assert keys[0] == keys[1]
    assert {d.status for d in sent} == {DeliveryStatus.SENT}
    (news_final,) = [s for s in r.fake.seen("newsroom") if s.body["seq"] == final.seq]
    assert news_final.images == 1  # the chart, in the JSON


async def test_each_receiver_gets_it_once_through_a_kill_between_send_and_mark(
    tmp_path: Path,
) -> None:
    r = rig()
    async with r.run(tmp_path):
        targets = [r.channel(t) for t in KINDS]
        await subscribe(r, *targets)
        async with r.app.db.begin() as conn:
            for t in KINDS:
                await conn.execute(
                    text(SENT_FAILS.format(channel=t).replace("sent_fails", f"f_{t}"))
                )
        message = await ingest(r, 84, 201)
        await r.app.idle()  # posted everywhere; marking it sent failed everywhere
        await r.restart()  # a kill -9: a new bot, fresh memory, same store
        async with r.app.db.begin() as conn:
            for t in KINDS:
                await conn.execute(text(f"DROP TRIGGER f_{t}"))
        await r.settle()
        sent = await deliveries(r)
    for channel in targets:
        assert times_shown(r, channel, message.headline) == 1
        keys = requests_with(r, channel.channel)
        assert len(keys) == 2
        assert keys[0] == keys[1]
    assert [d.status for d in sent] == [DeliveryStatus.SENT] * 3


async def test_the_json_is_the_standing_document_signed(tmp_path: Path) -> None:
    r = rig(page_base="https://counts.example.org/")
    async with r.run(tmp_path):
        await subscribe(r, r.channel("newsroom"))
        message = await ingest(r, 84, 201)
        await r.settle()
    (shown,) = r.fake.seen("newsroom")
    body = shown.body
    assert (body["version"], body["kind"], body["count_id"]) == (1, "update", "bessemer-2021")
    assert (body["seq"], body["state"], body["headline"]) == (
        message.seq,
        "counting",
        message.headline,
    )
    assert [f["votes"] for f in body["figures"]] == [84, 201]
    assert body["sentences"] == list(message.lines)
    assert body["url"] == "https://counts.example.org/c/bessemer-2021"
    assert body["delivery"]["key"] == shown.key
    assert body["delivery"]["action"] == "post"


async def test_a_wrong_secret_is_refused_and_not_retried(tmp_path: Path) -> None:
    r = rig()
    async with r.run(tmp_path):
        r.fake.add_secret("newsroom", "not what tallybot signs with")
        await subscribe(r, r.channel("newsroom"))
        await ingest(r, 84, 201)
        await r.settle()
        (sent,) = await deliveries(r)
        async with r.app.db.connect() as conn:
            (sub,) = await sub_rows.for_channel(conn, r.channel("newsroom"))
    assert len(r.fake.r.arrived) == 1  # a 401 is not retried
    assert sent.status is DeliveryStatus.DEAD
    assert not sub.enabled
    assert "401" in (sub.disabled_reason or "")
    assert r.fake.seen("newsroom") == []


@pytest.mark.parametrize("status", [400, 404, 413, 302])
async def test_a_4xx_or_a_redirect_is_not_retried(tmp_path: Path, status: int) -> None:
    r = rig()
    async with r.run(tmp_path):
        await subscribe(r, r.channel("mattermost"))
        r.fake.fail_next(status=status, target="mattermost")
        await ingest(r, 84, 201)
        await r.settle()
        (sent,) = await deliveries(r)
    assert len(r.fake.r.arrived) == 1  # none follows the one refused
    assert sent.status is DeliveryStatus.DEAD


async def test_a_target_that_keeps_failing_is_disabled_and_the_admins_told_once(
    tmp_path: Path,
) -> None:
    r = WebhookRig(
        {"newsroom": "json", "ops": "json"},
        disable_after=3,
        admins={"alerts": ["webhook:operator/ops"]},
    )
    async with r.run(tmp_path):
        await subscribe(r, r.channel("newsroom"))
        r.fake.fail_next(1000, status=503, target="newsroom")
        await ingest(r, 84, 201)
        await ingest(r, 400, 300)
        await r.settle()
        async with r.app.db.connect() as conn:
            (sub,) = await sub_rows.for_channel(conn, r.channel("newsroom"))
    told = r.fake.seen("ops")
    assert not sub.enabled
    assert len(told) == 1
    assert "newsroom failed 3 times in a row" in told[0].text
    assert r.fake.seen("newsroom") == []


async def test_the_operators_table_subscribes_its_targets(tmp_path: Path) -> None:
    r = WebhookRig({"newsroom": "json", "teams": "workflows"}, counts=["bessemer-2021"])
    async with r.run(tmp_path):
        message = await ingest(r, 84, 201)
        await r.settle()
        await r.restart()  # subscribed again at start: nothing doubled
        async with r.app.db.connect() as conn:
            subs = await sub_rows.for_channel(conn, r.channel("newsroom"))
    assert [s.count_id for s in subs] == ["bessemer-2021"]
    assert [times_shown(r, r.channel(t), message.headline) for t in ("newsroom", "teams")] == [1, 1]


async def test_a_hostile_title_pings_nobody_on_mattermost_or_teams(tmp_path: Path) -> None:
    title = "@channel @all <!here> <@U1> [x](https://evil.example) www.evil.example *bold*"
    r = rig()
    async with r.run(tmp_path, title):
        await subscribe(r, *(r.channel(t) for t in KINDS))
        await ingest(r, 84, 201)
        await r.settle()
    for t in KINDS:
        (shown,) = r.fake.seen(t)
        assert shown.pings == ()
        assert " ".join(typed(title).split()) in " ".join(shown.text.split())


async def test_a_private_address_is_refused_unless_the_operator_allows_it(tmp_path: Path) -> None:
    r = WebhookRig({"newsroom": "json"}, allow_private_addresses=False)
    async with r.run(tmp_path):
        adapter = r.app.adapters[r.platform]
        with pytest.raises(PermanentDeliveryError, match="loopback"):
            await adapter.post(r.channel("newsroom"), Notice("hello?"), key="tb-1")
    assert r.fake.r.requests == []


def test_the_chart_is_left_out_past_the_body_cap() -> None:
    from datetime import UTC, datetime

    from bot.domain import format as fmt
    from tests.helpers import bessemer, tally

    message = fmt.for_status(bessemer(), tally(738, 1798, seq=3))
    chart = Attachment("chart.png", b"x" * 100_000, "the final")
    now = datetime(2021, 4, 9, tzinfo=UTC)

    def body(cap: int) -> dict[str, object]:
        made = json_body(
            message, key="k", replaces=None, now=now, page_base=None, chart=chart, cap=cap
        )
        return dict(json.loads(made))

    assert "chart" in body(1_000_000)
    assert "chart" not in body(100_000)


def test_the_table_is_checked_whole(tmp_path: Path) -> None:
    raw = {
        "webhook": {
            "targets": [
                {"name": "a", "format": "slak"},
                {"name": "a"},
                {"name": "Bad Name"},
            ],
            "disable_after": 0,
        }
    }
    with pytest.raises(ConfigError) as caught:
        parse(raw, tmp_path / "tallybot.toml", plugins=plugins())
    said = "\n".join(caught.value.problems)
    assert "webhook.targets[0].format" in said
    assert "slack" in said
    assert "webhook.targets[2].name" in said
    assert "webhook.disable_after" in said
    twice = {"webhook": {"targets": [{"name": "a"}, {"name": "a", "format": "teams"}]}}
    with pytest.raises(ConfigError, match="a second target named 'a'"):
        parse(twice, tmp_path / "tallybot.toml", plugins=plugins())


def test_the_plugin_is_found_through_the_entry_point() -> None:
    assert Plugins.installed()["webhook"] is PLUGIN
    settings = WebhookSettings(targets=({"name": "newsroom"},))  # type: ignore[arg-type]
    names = [n.name for n in PLUGIN.secrets(settings)]
    assert names == ["TALLYBOT_WEBHOOK_NEWSROOM_URL", "TALLYBOT_WEBHOOK_NEWSROOM_SECRET"]


async def test_a_live_scoreboard_is_replaced_on_json_and_posted_anew_elsewhere(
    tmp_path: Path,
) -> None:
    r = WebhookRig({"newsroom": "json", "mattermost": "hooks"})
    async with r.run(tmp_path):
        await ingest(r, 84, 201)
        await subscribe(r, *r.channels, mode=Mode.LIVE)
        await ingest(r, 90, 230)  # routine: the scoreboard only
        await r.settle()
        later = await ingest(r, 95, 260)
        await r.settle()
    (board,) = r.fake.seen("newsroom")
    assert board.edits == 1
    assert later.headline in board.text
    assert board.body["delivery"]["action"] == "edit"
    assert board.body["delivery"]["replaces"] == board.key
    assert len(r.fake.seen("mattermost")) == 2  # an incoming webhook cannot edit
    keys = [k for _, t, k in r.fake.r.requests if t == "mattermost"]
    assert len(set(keys)) == 2
    assert keys[1].startswith(keys[0] + ".edit-")


async def test_each_target_is_paced_apart(tmp_path: Path) -> None:
    """One post a second to each target (the ``posts per target`` bucket), on the bot's clock."""
    r = WebhookRig({"a": "json", "b": "json"})
    async with r.run(tmp_path):
        await subscribe(r, *r.channels)
        await ingest(r, 84, 201)
        await ingest(r, 400, 300)  # the lead changes: a second post, right away
        await r.settle()
    for target in ("a", "b"):
        first, second = r.fake.taken_at[target]
        assert second - first >= 1.0
