"""Counts made and run from chat (issue 15): ``create``, ``edit``, ``archive`` and ``delete``
through the real app (store, scheduler, sources), every change audited; the configuration
file's counts are a seed that never overwrites silently what chat changed."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.commands.count_line import settings_words
from bot.commands.request import Reply, Request
from bot.domain.model import Choice
from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import outbox
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock

HALL = ChannelRef(Platform("discord"), "81384788765712384", "1001")
ELSEWHERE = ChannelRef(Platform("discord"), "99999999999999999", "2002")
MAKE = (
    'create local-7 Local 7 strike vote choices=yes:Strike,no:"No strike" tie=no '
    "received=412 eligible=450"
)


def file_count(title: str = "Amazon BHM1, Bessemer") -> dict[str, Any]:
    return {
        "id": "bessemer-2021",
        "title": title,
        "tie_holder": "no",
        "choices": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No union"}],
        "source": {"kind": "manual"},
    }


def config(tmp_path: Path, *counts: dict[str, Any], hosts: list[str] | None = None) -> Any:
    table: dict[str, Any] = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
        "counts": list(counts) or [file_count()],
    }
    if hosts is not None:
        table["chat_sources"] = {"allowed_hosts": hosts}
    return parse(table, tmp_path / "tallybot.toml")


def app_for(cfg: Any, clock: FakeClock, *, poll: bool = False) -> App:
    adapter = RecordingAdapter(Platform("discord"))
    return App(cfg, {Platform("discord"): lambda commands: adapter}, clock=clock, poll=poll)


async def ask(app: App, text: str, *, admin: bool = True, where: ChannelRef = HALL) -> Reply:
    user = "42" if admin else "7"
    assert isinstance(app.clock, FakeClock)
    app.clock.advance(3)  # within the command limits (8 in 20 s)
    request = Request(where, user, f"user{user}", text, tenant_admin=admin)
    return await app.commands.handle(request)


def test_quoted_values_are_one_word_and_apostrophes_stay() -> None:
    assert settings_words(['title="Local', "7", 'vote"', "Workers'", "vote"]) == [
        "title=Local 7 vote",
        "Workers'",
        "vote",
    ]
    assert settings_words(['choices=yes:Strike,no:"No', 'strike"']) == [
        "choices=yes:Strike,no:No strike"
    ]


async def test_a_count_made_in_chat_belongs_here_and_every_change_is_audited(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(config(tmp_path), clock) as app:
        refused = await ask(app, MAKE, admin=False)
        made = await ask(app, MAKE)
        taken = await ask(app, MAKE.replace("Local 7", "Another"))
        bad = await ask(app, "create x-1 Title choices=yes:Yes")
        sub = await ask(app, "subscribe local-7", admin=False)
        update = await ask(app, "update local-7 yes=200 no=100")
        edited = await ask(app, 'edit local-7 title="Local 7 strike authorisation" public=yes')
        ids = await ask(app, "edit local-7 choices=si:Si,no:No")
        hidden_before = await ask(app, "status local-7", where=ELSEWHERE)
        async with app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
            audit = list(reversed(await audit_rows.recent(conn)))

    assert refused.text.startswith("Error: only admins can create a count")
    assert made.ok, made.text
    assert made.text.startswith(
        "Created local-7: Local 7 strike vote; Strike (yes), No strike (no); decided by "
        "majority of valid votes; private to this place."
    )
    assert taken.text == (
        "Error: the name local-7 is taken (names are shared by every place); pick another"
    )
    assert bad.text == "Error: a count needs at least two choices"
    assert sub.ok, sub.text
    assert update.text.startswith("Accepted update #1 for local-7")
    assert edited.text.startswith("Changed local-7: Local 7 strike authorisation;")
    assert ids.text.startswith("Error: the choices of local-7 are yes, no")
    assert hidden_before.ok  # public now: another server sees it
    assert count is not None
    assert (count.owner, count.public, count.received, count.eligible) == (
        f"discord:{HALL.workspace}",
        True,
        412,
        450,
    )
    assert count.choices == (Choice("yes", "Strike"), Choice("no", "No strike"))
    changes = [(a.action, a.allowed, a.detail) for a in audit if a.action in ("create", "edit")]
    assert changes == [
        ("create", False, "refused: not an admin"),
        ("create", True, "created"),
        ("edit", True, "edited"),
    ]
    (edit,) = [a for a in audit if a.action == "edit"]
    assert edit.old is not None
    assert "title=Local 7 strike vote" in edit.old
    assert "public=no" in edit.old
    assert edit.new is not None
    assert "title=Local 7 strike authorisation" in edit.new
    assert "public=yes" in edit.new


async def test_archive_hides_and_stops_and_delete_asks_first(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(config(tmp_path), clock) as app:
        assert (await ask(app, MAKE)).ok
        assert (await ask(app, "subscribe local-7")).ok
        assert (await ask(app, "update local-7 yes=10 no=4")).ok
        archived = await ask(app, "archive local-7")
        listed = await ask(app, "list")
        refused = await ask(app, "update local-7 yes=11 no=4")
        back = await ask(app, "archive local-7 undo")
        again = await ask(app, "update local-7 yes=11 no=4")
        asked = await ask(app, "delete local-7")
        async with app.db.connect() as conn:
            still = await count_rows.get(conn, "local-7")
        other = await ask(app, "delete local-7 confirm", where=ELSEWHERE)
        gone = await ask(app, "delete local-7 confirm")
        after = await ask(app, "status local-7")
        async with app.db.connect() as conn:
            left = (
                await count_rows.get(conn, "local-7"),
                await tally_rows.history(conn, "local-7"),
                await sub_rows.for_count(conn, "local-7"),
            )
            audit = [
                (a.action, a.detail)
                for a in reversed(await audit_rows.recent(conn))
                if a.action in ("archive", "delete")
            ]
    assert archived.text.startswith("Archived local-7: no longer polled or listed")
    assert "local-7" not in listed.text
    assert refused.text == "Error: local-7 is archived; to run it again: archive local-7 undo"
    assert back.ok
    assert again.text.startswith("Accepted update #2 for local-7")
    assert asked.text == (
        "This deletes local-7 (Local 7 strike vote) for good: its 2 updates and the "
        "subscriptions of 1 channels. To go ahead: delete local-7 confirm"
    )
    assert still is not None
    assert other.text == "Error: unknown count 'local-7'"  # another server's private count
    assert gone.text == "Deleted local-7, its 2 updates and 1 subscriptions."
    assert after.text.startswith("Error: unknown count 'local-7'")
    assert left == (None, [], [])
    assert audit == [
        ("archive", "archived"),
        ("archive", "taken out of the archive"),
        ("delete", "asked to confirm"),
        ("delete", "refused: local-7 is a private count of discord:81384788765712384"),
        ("delete", "deleted"),
    ]


async def test_the_file_is_a_seed_that_never_overwrites_what_chat_changed(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    operator = Request(HALL, "1", "op", "", admin=True, home=True)
    async with app_for(config(tmp_path), clock) as app:
        assert (await app.commands.handle(operator_says(operator, MAKE))).ok
    with caplog.at_level(logging.INFO, logger="bot.ingest.live"):
        async with app_for(config(tmp_path, file_count("Bessemer, renamed")), clock):
            pass
        async with app_for(config(tmp_path, file_count("Bessemer, renamed")), clock) as app:
            edit = 'edit bessemer-2021 title="Bessemer, as chat says"'
            assert (await app.commands.handle(operator_says(operator, edit))).ok
        more = {**file_count(), "id": "staten-island-2022"}
        again = config(tmp_path, file_count("Bessemer, again"), more)
        async with app_for(again, clock) as app, app.db.connect() as conn:
            kept = await count_rows.get(conn, "bessemer-2021")
            made = await count_rows.get(conn, "local-7")
    said = [r.getMessage() for r in caplog.records if r.name == "bot.ingest.live"]
    assert said == [
        "count bessemer-2021 changed in the configuration file: title",
        "counts from the configuration file: added none; changed bessemer-2021; left alone none",
        "counts from the configuration file: added none; changed none; left alone bessemer-2021",
        "count bessemer-2021 was changed in chat by discord:1 (op): the configuration file's "
        "version is not applied (edit it in chat, or delete it there to take the file's)",
        "counts from the configuration file: added staten-island-2022; changed none; left "
        "alone bessemer-2021",
    ]
    assert kept is not None
    assert kept.title == "Bessemer, as chat says"
    assert made is not None  # made in chat, not in the file: kept


def operator_says(request: Request, text: str) -> Request:
    return Request(request.channel, request.user_id, request.user_name, text, admin=True, home=True)


async def test_a_key_is_never_shown_where_everyone_would_see_it(
    tmp_path: Path, clock: FakeClock
) -> None:
    group = ChannelRef(Platform("telegram"), "-1001500000001", "-1001500000001")
    asked = Request(group, "5", "ann", "apikey create", tenant_admin=True, private_replies=False)
    async with app_for(config(tmp_path), clock) as app:
        refused = await app.commands.handle(asked)
        allowed = await app.commands.handle(replace(asked, private_replies=True))
    assert refused.text.startswith("Error: a new key would show to everyone in this workspace")
    assert allowed.text.startswith("API key #1")


async def test_deliveries_lists_only_the_counts_one_administers(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(config(tmp_path), clock) as app:
        assert (await ask(app, MAKE)).ok
        async with app.db.begin() as conn:
            for count_id in ("local-7", "bessemer-2021"):
                [delivery] = await outbox.enqueue(conn, [dead_letter(count_id)])
                await outbox.mark_dead(conn, delivery, error="channel gone")
        here = await ask(app, "deliveries")
        away = await ask(app, "deliveries", where=ELSEWHERE)
        operator = await app.commands.handle(
            Request(ELSEWHERE, "1", "op", "deliveries", admin=True, home=True)
        )
    assert "local-7" in here.text
    assert "bessemer-2021" not in here.text
    assert away.text == "Every message was delivered (nothing gave up)."
    assert "bessemer-2021" in operator.text
    assert "local-7" not in operator.text


async def test_a_count_deleted_while_its_message_is_on_its_way_records_the_send(
    tmp_path: Path, clock: FakeClock
) -> None:
    """An admin deletes the count at the worst moment: a delivery of it is SENDING. Its answer
    still finds the delivery to record (no store error, no resend), the finished ones go."""
    async with app_for(config(tmp_path), clock) as app:
        assert (await ask(app, MAKE)).ok
        async with app.db.begin() as conn:
            done, flying = await outbox.enqueue(conn, [dead_letter("local-7")] * 2)
            await outbox.mark_dead(conn, done, error="channel gone")
            assert await outbox.mark_sending(conn, [flying], at=clock.now()) == 1
        assert (await ask(app, "delete local-7 confirm")).ok
        async with app.db.begin() as conn:
            await outbox.mark_sent(conn, flying, platform_message_id="m1", at=clock.now())
            sent, gone = await outbox.get(conn, flying), await outbox.get(conn, done)
    assert gone is None
    assert sent is not None
    assert sent.status is outbox.DeliveryStatus.SENT


def dead_letter(count_id: str) -> NewDelivery:
    return NewDelivery(
        subscription_id=None,
        channel=HALL,
        count_id=count_id,
        tally_seq=1,
        action=DeliveryAction.POST,
        significant=True,
        payload="{}",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
