"""Authority stops at the edge of a workspace: with the app in two workspaces of one organisation
(FakeSlack, the real slack_bolt client), workspace admins and owners count only in the
workspaces listed under ``[slack] admin_workspaces`` (the Slack plug-in's admin policy), and only
their own; configured user ids count everywhere."""

from __future__ import annotations

from pathlib import Path

from bot.store import audit as audit_rows
from bot.store import tallies as tally_rows
from tests.adapters.test_slack import VirtualTime, bot_posts, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import FakeSlack


async def test_admins_of_another_workspace_are_refused_and_audited(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    other = fake.add_workspace("elsewhere")
    home = fake.add_channel("general")
    away = fake.add_channel("elsewhere-general", team_id=other)
    ada = fake.add_user("ada", is_admin=True)  # an admin of the listed workspace
    olga = fake.add_user("olga", is_owner=True, team_id=other)
    cy = fake.add_user("cy", team_id=other)  # a configured admin
    cfg = config(tmp_path, fake, slack_users=(cy,))
    assert cfg.settings("slack").admin_workspaces == {fake.team_id}
    wrong_final = "final bessemer-2021 yes=1300 no=1850"
    async with running(fake, cfg, vt) as bot:
        await bot.slash("subscribe bessemer-2021", user=ada, channel=home)
        ours = await bot.slash("update bessemer-2021 yes=738 no=1798", user=ada, channel=home)
        at_home = await bot.slash(wrong_final, user=olga, channel=away)
        in_ours = await bot.slash(wrong_final, user=olga, channel=home)  # e.g. a shared channel
        configured = await bot.slash("pause bessemer-2021", user=cy, channel=away)
        await bot.settle()
        async with bot.app.db.connect() as conn:
            audit = list(reversed(await audit_rows.recent(conn)))
            history = await tally_rows.history(conn, "bessemer-2021")

    assert ours.body["text"].startswith("Accepted update #1 for bessemer-2021")
    # The operator's private count does not exist in a workspace the operator does not list;
    # in a listed one, an admin of another workspace is no admin.
    assert at_home.response_type == "ephemeral"
    assert at_home.body["text"] == "Error: unknown count 'bessemer-2021'"
    assert in_ours.response_type == "ephemeral"
    assert in_ours.body["text"].startswith("Error: only admins can declare a count final")
    assert configured.body["text"].startswith("Accepted update #2 for bessemer-2021")
    assert [(t.votes["yes"], t.state.value) for t in history] == [
        (738, "counting"),
        (738, "paused"),
    ]
    assert [(a.actor, a.action, a.allowed) for a in audit] == [
        (f"slack:{ada} (ada)", "update", True),
        (f"slack:{olga} (olga)", "final", False),
        (f"slack:{olga} (olga)", "final", False),
        (f"slack:{cy} (cy)", "pause", True),
    ]
    assert audit[1].detail == "refused: bessemer-2021 is a private count of operator"
    assert audit[2].detail == "refused: not an admin"  # not an admin of this workspace
    texts = [m.text for m in bot_posts(fake, home)]
    assert texts
    assert not any("Final" in t for t in texts)
