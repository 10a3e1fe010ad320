"""Webhook targets a place's admins register in chat (``/count webhook``), where the operator
allows it: the verb exists only then; a URL inside the operator's network is refused as it is
typed and again at connect; a target is the place's own, subscribed, listed by host only, and
removed with its subscription; a json target's secret is shown once, never in a shared reply."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from adapters.webhook.plugin import PLUGIN
from adapters.webhook.settings import WebhookSettings
from adapters.webhook.tables import webhook_targets
from bot.commands.request import Reply, Request
from bot.domain.message import Notice
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import PermanentDeliveryError
from bot.store import audit as audit_rows
from bot.store import subscriptions as sub_rows
from tests.adapters.rigs.webhook import WebhookRig

ROOM = ChannelRef(Platform("discord"), "111", "222")
PLACE = "discord.111"


def asked(text: str, *, private: bool = True, admin: bool = True) -> Request:
    return Request(
        ROOM, "333", "ada", text, admin=admin, tenant_admin=admin, home=True,
        place="server", private_replies=private,
    )  # fmt: skip


async def say(r: WebhookRig, text: str, *, private: bool = True, admin: bool = True) -> Reply:
    return await r.app.commands.handle(asked(text, private=private, admin=admin))


def test_the_verb_exists_only_where_the_operator_allows_it() -> None:
    assert PLUGIN.verbs(WebhookSettings()) == []
    ((spec, _),) = PLUGIN.verbs(WebhookSettings(allow_chat_targets=True))
    assert spec.name == "webhook"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.0.0.5/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://2130706433/hook",
        "file:///etc/passwd",
    ],
)
async def test_an_address_inside_the_network_is_refused_as_typed(tmp_path: Path, url: str) -> None:
    r = WebhookRig({"ops": "json"}, allow_chat_targets=True)
    async with r.run(tmp_path):
        reply = await say(r, f"webhook bessemer-2021 {url}")
        async with r.app.db.connect() as conn:
            rows = (await conn.execute(select(webhook_targets))).all()
    assert "refused" in reply.text or "must start with" in reply.text
    assert len(reply.text.splitlines()) == 1
    assert rows == []


async def test_a_place_adds_lists_and_removes_a_target(tmp_path: Path) -> None:
    r = WebhookRig({"ops": "json"}, allow_chat_targets=True)
    async with r.run(tmp_path):
        added = await say(r, "webhook bessemer-2021 https://hooks.example.org/abc/secret-path json")
        shared = await say(
            r, "webhook bessemer-2021 https://hooks.example.org/x json", private=False
        )
        teams = await say(r, "webhook bessemer-2021 https://teams.example.org/wf teams")
        listed = await say(r, "webhook bessemer-2021 list")
        channel = ChannelRef(Platform("webhook"), PLACE, "t1")
        async with r.app.db.connect() as conn:
            (sub,) = await sub_rows.for_channel(conn, channel)
        removed = await say(r, "webhook bessemer-2021 remove 1")
        async with r.app.db.connect() as conn:
            left = await sub_rows.for_channel(conn, channel)
            rows = (await conn.execute(select(webhook_targets))).all()
    assert added.text.startswith("Webhook #1 gets bessemer-2021")
    assert "signing secret, shown only now" in added.text
    assert "would show to everyone" in shared.text  # refused: a secret in a shared reply
    assert "#2" in teams.text
    assert "secret" not in teams.text
    assert "hooks.example.org" in listed.text
    assert "secret-path" not in listed.text
    assert sub.count_id == "bessemer-2021"
    assert "no longer gets" in removed.text
    assert left == []
    assert [(row.id, row.place, row.format) for row in rows] == [(2, PLACE, "teams")]


async def test_a_target_registered_in_chat_never_reaches_a_private_address(tmp_path: Path) -> None:
    """Even where the operator's own targets may (``allow_private_addresses``): a name that
    resolves inside the network at connect is refused there (here: loopback, stored as if it
    had passed the check as typed)."""
    r = WebhookRig({"ops": "json"}, allow_chat_targets=True, allow_private_addresses=True)
    async with r.run(tmp_path):
        async with r.app.db.begin() as conn:
            await conn.execute(
                webhook_targets.insert().values(
                    place=PLACE, count_id="bessemer-2021", url=r.fake.url("hooks", "inside"),
                    format="slack", secret=None, created_by="t", created_at=r.clock.now(),
                )
            )  # fmt: skip
        adapter = r.app.adapters[r.platform]
        with pytest.raises(PermanentDeliveryError, match="loopback"):
            await adapter.post(ChannelRef(r.platform, PLACE, "t1"), Notice("hi"), key="tb-1")
        await adapter.post(r.channel("ops"), Notice("hi"), key="tb-2")  # the operator's: allowed
    assert [t for _, t, _ in r.fake.r.arrived] == ["ops"]


async def test_a_member_who_administers_nothing_is_refused(tmp_path: Path) -> None:
    r = WebhookRig({"ops": "json"}, allow_chat_targets=True)
    async with r.run(tmp_path):
        reply = await say(r, "webhook bessemer-2021 https://hooks.example.org/a", admin=False)
        async with r.app.db.connect() as conn:
            rows = (await conn.execute(select(webhook_targets))).all()
    assert "admin" in reply.text
    assert rows == []


async def test_the_audit_log_keeps_no_address_secret(tmp_path: Path) -> None:
    """A registered target's path (where Slack's incoming webhooks keep their secret) and query
    (Teams') never reach the audit log, which every admin reads: only scheme and host."""
    r = WebhookRig({"ops": "json"}, allow_chat_targets=True)
    async with r.run(tmp_path):
        await say(r, "webhook bessemer-2021 https://hooks.example.org/services/T1/s3cr3t slack")
        await say(r, "webhook bessemer-2021 https://teams.example.org/wf?sig=s3cr3t teams")
        async with r.app.db.connect() as conn:
            entries = await audit_rows.recent(conn, count_id="bessemer-2021")
    said = [e.new or "" for e in entries if e.action == "webhook"]
    assert len(said) == 2
    assert all("s3cr3t" not in f"{e.old}{e.new}{e.detail}" for e in entries)
    assert any(s.endswith("https://hooks.example.org/\u2026 slack") for s in said)
