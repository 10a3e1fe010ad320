"""Authority and sight stop at a workspace's edge (issue 15), with the app in two workspaces
(FakeSlack, the real slack_bolt client): a count that workspace A owns, private, does not exist
for the owner of workspace B, through every command; A's admins run it, A's members do not, and
anyone in a channel may subscribe it to a count they can see."""

from __future__ import annotations

from pathlib import Path

from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from tests.adapters.test_slack import VirtualTime, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import FakeSlack

SECRET = "local-7-strike-vote"


def tenant_count(team: str, *, public: bool = False) -> Count:
    return Count(
        id=SECRET,
        title="Local 7 strike authorisation",
        choices=(Choice("yes", "Strike"), Choice("no", "No strike")),
        rule=DecisionRule(RuleKind.MAJORITY, "no"),
        status=CountStatus.COUNTING,
        owner=f"slack:{team}",
        public=public,
    )


async def test_another_workspaces_owner_cannot_see_or_touch_a_private_count(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    other = fake.add_workspace("elsewhere")
    home = fake.add_channel("general")
    away = fake.add_channel("elsewhere-general", team_id=other)
    ada = fake.add_user("ada", is_admin=True)  # an admin of workspace A
    bo = fake.add_user("bo")  # a member of workspace A
    olga = fake.add_user("olga", is_owner=True, team_id=other)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(fake.team_id))
        followed = await bot.slash(f"subscribe {SECRET}", user=bo, channel=home)
        ours = await bot.slash(f"update {SECRET} yes=10 no=4", user=ada, channel=home)
        member = await bot.slash(f"pause {SECRET}", user=bo, channel=home)
        theirs = []
        for line in [
            f"update {SECRET} yes=1 no=99",
            f"correct {SECRET} yes=1 no=2",
            f"pause {SECRET}",
            f"final {SECRET} yes=10 no=4",
            f"edit {SECRET} public=yes",
            f"archive {SECRET}",
            f"delete {SECRET} confirm",
            f"admins add {SECRET} <@{olga}>",
            "apikey create",
            f"subscribe {SECRET}",
            f"status {SECRET}",
            f"history {SECRET}",
        ]:
            vt.clock.advance(6)  # within the command limits
            theirs.append(await bot.slash(line, user=olga, channel=away))
        vt.clock.advance(6)
        typo = await bot.slash("status no-such-count", user=olga, channel=away)
        listed = await bot.slash("list", user=olga, channel=away)
        async with bot.app.db.connect() as conn:
            history = await tally_rows.history(conn, SECRET)
            subs = await sub_rows.for_count(conn, SECRET)
            audit = list(reversed(await audit_rows.recent(conn)))
            still = await count_rows.get(conn, SECRET)

    assert followed.body["text"].startswith(f"Subscribed this channel to {SECRET}")
    assert ours.body["text"].startswith(f"Accepted update #1 for {SECRET}")
    assert member.body["text"].startswith(
        f"Error: only admins of the workspace that owns {SECRET} can pause a count"
    )
    unknown = typo.body["text"]
    assert unknown.startswith("Error: unknown count 'no-such-count'")
    *refused, key, subscribe, status, history_reply = theirs
    assert key.body["text"].startswith("API key #1 for the counts of this workspace")
    for answer in [*refused, subscribe, status, history_reply]:
        assert answer.response_type == "ephemeral"
        assert answer.body["text"] == unknown.replace("no-such-count", SECRET)
    assert SECRET not in unknown
    assert SECRET not in listed.body["text"]
    assert [(t.seq, t.votes["yes"]) for t in history] == [(1, 10)]
    assert [s.channel.workspace for s in subs] == [fake.team_id]
    assert [(a.actor.split(" ")[0], a.action, a.allowed) for a in audit] == [
        (f"slack:{ada}", "update", True),
        (f"slack:{bo}", "pause", False),
        (f"slack:{olga}", "update", False),
        (f"slack:{olga}", "correct", False),
        (f"slack:{olga}", "pause", False),
        (f"slack:{olga}", "final", False),
        (f"slack:{olga}", "edit", False),
        (f"slack:{olga}", "archive", False),
        (f"slack:{olga}", "delete", False),
        (f"slack:{olga}", "admins", False),
        (f"slack:{olga}", "apikey", True),  # a key of her own workspace, for its own counts
    ]
    assert audit[-2].detail == f"refused: {SECRET} is a private count of slack:{fake.team_id}"
    assert still == tenant_count(fake.team_id)  # not edited, archived or deleted
