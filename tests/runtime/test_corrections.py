"""Issue 24, parts 1, 2 and 4, end to end through the console: the whole bot (store, pipeline,
dispatcher) printing to a terminal, commands typed as an admin types them.

An edit that changes a published call is a correction, said to the subscribers who heard the
call; a final's rule changes only as a correction; history keeps what was published as
published. Ballots received going down is a correction that says from what to what; challenged
ballots that leave the pile are opened or sustained, never vanished. A paused count says so, and
new figures during a pause say they resume it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.commands.request import Reply, Request
from bot.domain import format as fmt
from bot.runtime.app import App
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.web.view import entry, view
from tests.adapters.rigs.console import ConsoleRig

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[ConsoleRig]:
    console = ConsoleRig()
    async with console.run(tmp_path):
        yield console


async def ask(rig: ConsoleRig, text: str) -> Reply:
    rig.clock.advance(3)  # within the command limits
    channel = rig.channels[0]
    request = Request(channel, "42", "ana", text, admin=True, tenant_admin=True, home=True)
    return await rig.app.commands.handle(request)


async def typed(rig: ConsoleRig, *lines: str) -> list[Reply]:
    """Each line typed in turn, every one accepted."""
    replies = []
    for line in lines:
        reply = await ask(rig, line)
        assert reply.ok, (line, reply.text)
        replies.append(reply)
    return replies


async def printed(rig: ConsoleRig) -> list[str]:
    """Every message the terminal shows, once delivered."""
    await rig.settle()
    return [" ".join(seen.text.split()) for seen in rig.seen(rig.channels[0])]


def app(rig: ConsoleRig) -> App:
    return rig.app


async def test_an_edit_of_the_threshold_withdraws_the_call_and_says_so(rig: ConsoleRig) -> None:
    await typed(
        rig,
        "create ratify Contract vote choices=yes:Ratify,no:Reject rule=threshold "
        "threshold=2/3 tie=no received=1400",
        "subscribe ratify",
        "update ratify yes=1000 no=400",
    )
    shown = await printed(rig)
    assert "Ratify has clinched two-thirds of the valid votes (unofficial)" in shown[-1]
    edited = await ask(rig, "edit ratify threshold=3/4")
    assert edited.ok, edited.text
    said = (
        "Rule corrected to three-quarters: the earlier call for Ratify no longer holds; Reject "
        "has clinched"
    )
    assert edited.message is not None
    assert edited.message.headline.startswith(said)
    assert edited.text.startswith("Changed ratify: Contract vote;")
    assert f"Published as update #2: {said}" in edited.text
    shown = await printed(rig)
    assert said in shown[-1]  # the subscribers who heard the call hear it is withdrawn
    assert "Correction: these figures replace update #1." in shown[-1]
    assert "Rule corrected to three-quarters." in shown[-1]
    # The next update is weighed against what was published: nothing is withdrawn again.
    (later,) = await typed(rig, "update ratify no=401 received=1401")
    assert later.message is not None
    assert "withdrawn" not in later.message.headline
    assert "no longer holds" not in later.message.headline
    async with app(rig).db.connect() as conn:
        audit = [a for a in await audit_rows.recent(conn) if a.action == "edit"]
    details = [a.detail for a in reversed(audit)]
    assert details[0] == "edited"
    assert details[1].startswith(f"published again as update #2: {said}")
    assert audit[0].old is not None
    assert "yes=1000 no=400" in audit[0].old
    assert audit[0].new is not None
    assert "yes=1000 no=400" in audit[0].new


async def test_an_edit_of_received_withdraws_a_clinch(rig: ConsoleRig) -> None:
    await typed(
        rig,
        "create local-9 Local 9 vote choices=yes:Yes,no:No tie=no received=900",
        "subscribe local-9",
        "update local-9 yes=300 no=460",
    )
    assert "No has clinched a majority (unofficial)" in (await printed(rig))[-1]
    (edited,) = await typed(rig, "edit local-9 received=1000")
    said = (
        "Ballots received corrected from 900 to 1,000: the earlier call for No no longer holds; "
        "No leads by 160"
    )
    assert edited.message is not None
    assert edited.message.headline == said
    shown = await printed(rig)
    assert said in shown[-1]
    assert "760 of 1,000 ballots counted (76.0%); 240 not yet opened." in shown[-1]
    # and an edit that changes nothing of the call publishes nothing again
    (renamed,) = await typed(rig, 'edit local-9 title="Local 9 strike vote"')
    assert renamed.message is None
    assert len(await printed(rig)) == len(shown)


async def test_a_final_rule_changes_only_as_a_correction_and_history_stays(
    rig: ConsoleRig,
) -> None:
    await typed(
        rig,
        "create tie Tie vote choices=yes:Yes,no:No tie=no received=100",
        "subscribe tie",
        "final tie yes=50 no=50",
    )
    first = "Final tally: tied at 50 each; Yes falls short of a majority"
    assert first in (await printed(rig))[-1]
    refused = await ask(rig, "edit tie tie=yes")
    assert not refused.ok
    assert refused.text == (
        "Error: tie is final: this changes how its result was decided; if it is right, send "
        "it as a correction: edit tie tie=yes correction=yes"
    )
    async with app(rig).db.connect() as conn:
        count = await count_rows.get(conn, "tie")
    assert count is not None
    assert count.rule.tie_holder == "no"
    (corrected,) = await typed(rig, "edit tie tie=yes correction=yes")  # the hint, followed
    said = (
        "Corrected final tally: tie holder corrected to Yes; the earlier call for No is "
        "withdrawn; tied at 50 each; No falls short of a majority"
    )
    assert corrected.message is not None
    assert corrected.message.headline == said
    assert said in (await printed(rig))[-1]
    (status,) = await typed(rig, "status tie")
    assert status.message is not None
    assert status.message.headline == "Final tally: tied at 50 each; No falls short of a majority"
    assert [c.note for c in status.message.choices] == ["winner", "cannot win"]
    async with app(rig).db.connect() as conn:
        count = await count_rows.get(conn, "tie")
        history = await tally_rows.history(conn, "tie")
    assert count is not None
    assert [t.seq for t in history] == [1, 2]
    # The page's history shows what was published, as published, under the rule as it is now.
    assert entry(count, history[0], None).headline == first
    assert entry(count, history[1], history[0]).headline == said
    page = view(count, history, None, chart_url=lambda seq: "", narrow_url=lambda seq: "")
    assert page.seq == 2
    assert page.description.count("Corrected final tally: ") == 1  # the chart says Corrected
    assert fmt.chart_description(count, history[:1]).count("Corrected") == 0
    (listed,) = await typed(rig, "history tie")
    assert f"\n#1 · 8 Apr 2021 12:00 UTC · Yes 50, No 50; final · {first}" in (listed.text)
    assert f" · {said} (source: admin ana; a correction)" in listed.text


async def test_received_going_down_is_a_correction_that_says_from_what_to_what(
    rig: ConsoleRig,
) -> None:
    await typed(rig, "create grow Grow vote choices=yes:Yes,no:No", "subscribe grow")
    await typed(rig, "update grow yes=310 no=520 received=1500")
    lower = await ask(rig, "update grow yes=600 no=700 received=1300")
    assert not lower.ok
    assert lower.text == (
        "Rejected: figures went down (received 1,500 -> 1,300); send them as a correction if "
        "they are right (to fix earlier figures: correct grow yes=600 no=700 received=1300)"
    )
    (fixed,) = await typed(rig, "correct grow yes=600 no=700 received=1300")
    said = "Ballots received corrected from 1,500 to 1,300: No has clinched a majority (unofficial)"
    assert fixed.message is not None
    assert fixed.message.headline == said
    shown = await printed(rig)
    assert said in shown[-1]
    assert "Ballots received corrected from 1,500 to 1,300." in shown[-1]
    # received going down by an edit needs the correction too
    refused = await ask(rig, "edit grow received=1200")
    assert not refused.ok
    assert refused.text == (
        "Error: ballots received would go down from 1,300 to 1,200; if it is right, send it "
        "as a correction: edit grow received=1200 correction=yes"
    )


async def test_challenged_ballots_are_opened_or_sustained_never_vanished(
    rig: ConsoleRig,
) -> None:
    await typed(
        rig,
        "create x Local 7 vote choices=yes:Yes,no:No tie=no received=30",
        "subscribe x all",
        "update x yes=10 no=12 challenged=7",
    )
    gone = await ask(rig, "update x challenged=0")
    assert not gone.ok
    assert gone.text == (
        "Rejected: 7 challenged ballots resolved (challenged 7 -> 0) but only 0 more counted "
        "or sustained: a ballot whose challenge is overruled is counted with the votes, one "
        "whose challenge is upheld is sustained=N (if those challenges were upheld, say so: "
        "update x challenged=0 sustained=7)"
    )
    (opened,) = await typed(rig, "update x yes=13 no=13 challenged=2 sustained=1")
    assert opened.message is not None
    resolved = "5 challenged ballots resolved: 4 opened and counted; 1 challenge sustained"
    assert f"{resolved} (not counted)." in opened.message.lines
    (upheld,) = await typed(rig, "update x challenged=0 sustained=3")  # the hint's form
    shown = await printed(rig)
    assert "2 challenged ballots resolved: 2 challenges sustained (not counted)." in shown[-1]
    assert (
        "26 of 30 ballots counted (86.7%); 1 not yet opened; 3 challenges sustained" in (shown[-1])
    )
    assert "not yet opened" not in shown[-1].replace("1 not yet opened", "")
    assert upheld.message is not None
    assert upheld.message.headline == "Tied at 13 each"
    (final,) = await typed(rig, "final x no=14")
    assert final.message is not None
    assert final.message.headline == "Final tally: No wins, 14 to 13"


async def test_a_paused_count_says_so_and_new_figures_say_they_resume_it(
    rig: ConsoleRig,
) -> None:
    await typed(
        rig,
        "subscribe bessemer-2021",
        "update bessemer-2021 yes=463 no=1100 challenged=505",
        "pause bessemer-2021",
    )
    (status,) = await typed(rig, "status bessemer-2021")
    assert status.message is not None
    assert status.message.headline == "Count paused: No union leads by 637"
    (again,) = await typed(rig, "pause bessemer-2021")
    assert again.text == "No change: bessemer-2021 is paused already."
    (update,) = await typed(rig, "update bessemer-2021 yes=470")
    assert update.text == (
        "Accepted update #3 for bessemer-2021 (new figures resume the count, paused at update "
        "#2): Count resumed: No union leads by 630"
    )
    shown = await printed(rig)
    assert "Count resumed: No union leads by 630" in shown[-1]
    (resume,) = await typed(rig, "resume bessemer-2021")
    assert resume.text == "No change: bessemer-2021 is not paused: it is counting."
    (status,) = await typed(rig, "status bessemer-2021")
    assert status.message is not None
    assert status.message.headline == "No union leads by 630"
    (listed,) = await typed(rig, "list")
    assert "bessemer-2021: Amazon BHM1 union election, Bessemer AL [counting]" in listed.text
