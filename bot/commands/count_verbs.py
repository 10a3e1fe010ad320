"""Counts made and run from chat: ``create``, ``edit``, ``archive``, ``delete``.

A count made in chat belongs to the place it was made in (``Request.tenant``) and is private
until ``public=yes``; its settings are one line (:mod:`bot.commands.count_line`). The store is
the source of truth: a change here is kept (``edited_by``), and the configuration file's seed
never overwrites it silently (``bot.runtime.app``). Every change is audited with the count before
and after; the app's sources and scheduler follow at once (``Services.count_changed``).
``delete`` asks first: ``delete <count>`` says what would go, ``delete <count> confirm`` does it.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.commands.args import Choice, ChoiceArg, Command, CountArg, SettingsArg, TextArg
from bot.commands.authority import find_count
from bot.commands.count_line import (
    KEYS,
    count_from,
    flag,
    settings_words,
    source_from,
    stored,
)
from bot.commands.edit_form import EDIT_FORM
from bot.commands.forms import CREATE_FORM
from bot.commands.request import Reply
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.domain.model import OPERATOR, Count, Tally, TallyState
from bot.domain.words import n
from bot.errors import CommandError
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import grants as grant_rows
from bot.store import place_alerts
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.audit import AuditEntry
from bot.store.grants import Grant, GrantKind

VERBS = Verbs()
"""The verbs of this module (registered in :data:`bot.commands.builtin.VERBS`)."""


class CountSettingsArg(SettingsArg):
    """:class:`SettingsArg` whose values may be in double quotes (``title="Local 7 vote"``)."""

    @property
    def usage(self) -> str:
        return (
            "[choices=yes:Yes,no:No] [rule=majority|plurality|threshold] [tie=ID] "
            "[threshold=2/3] [received=N] [eligible=N] [public=yes|no] [pace=yes|no] [source=URL] "
            "[fields=yes:path,...]"
        )

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        return super().take(command, settings_words(words), usage)


class NewCountSettingsArg(CountSettingsArg):
    """``create``'s settings: a new count needs its choices (two at least), so they are not
    marked optional."""

    @property
    def usage(self) -> str:
        return super().usage.replace("[choices=yes:Yes,no:No]", "choices=yes:Yes,no:No", 1)


SETTINGS = NewCountSettingsArg(
    KEYS, "Settings as key=value: choices=yes:Yes,no:No rule=majority ..."
)
CORRECTION = "correction"
"""``edit``'s own key: ``correction=yes`` sends the edit as a correction (see :func:`edit`)."""


class EditSettingsArg(CountSettingsArg):
    @property
    def usage(self) -> str:
        return super().usage + " [correction=yes]"


EDIT_SETTINGS = EditSettingsArg(
    (*KEYS, CORRECTION), "Settings as key=value: rule=threshold threshold=3/4 ..."
)
NEW = CountArg("The new count's name: lowercase letters, digits and dashes", existing=False)
"""Not autocompleted: the counts offered would be the names it cannot take."""
TITLE = TextArg("title", "The count's title", required=False)
UNDO = ChoiceArg(
    "undo",
    (Choice("undo", "take it out of the archive", "take it out of the archive"),),
    default="",
    description="Take it out of the archive instead",
)
CONFIRM = ChoiceArg(
    "confirm",
    (Choice("confirm", "yes, delete it for good", "delete it for good"),),
    default="",
    description="Type confirm to delete it for good",
)


def summary(count: Count, source: str | None = None) -> str:
    """The count's settings in one line, for the audit log."""
    rule = count.rule
    parts = [
        f"title={count.title}",
        "choices=" + ",".join(f"{c.id}:{c.label}" for c in count.choices),
        f"rule={rule.kind}",
        f"tie={rule.tie_holder or 'none'}",
        f"threshold={rule.threshold or 'none'}",
        f"received={count.received if count.received is not None else 'none'}",
        f"eligible={count.eligible if count.eligible is not None else 'none'}",
        f"public={'yes' if count.public else 'no'}",
        f"pace={'yes' if count.pace else 'no'}",
        f"archived={'yes' if count.archived else 'no'}",
        f"owner={count.owner}",
    ]
    if source is not None:
        parts.append(f"source={source}")
    return "; ".join(parts)


def entry(call: Call, count_id: str, old: str | None, new: str | None, detail: str) -> AuditEntry:
    r = call.request
    at = call.services.clock.now()
    return AuditEntry(at, r.actor, call.spec.name, count_id, old, new, True, detail)


def described(count: Count) -> str:
    rule = count.rule.describe()
    choices = ", ".join(f"{c.label} ({c.id})" for c in count.choices)
    seen = "public" if count.public else "private to this place"
    return f"{count.id}: {count.title}; {choices}; decided by {rule}; {seen}"


@VERBS.verb(
    VerbSpec(
        Verb.CREATE,
        "Admins: make a new count, owned by this server or workspace",
        (NEW, SETTINGS, TITLE),
        admin="create a count",
        audits_itself=True,
        on_count=False,
        form=CREATE_FORM,
    )
)
async def create(call: Call) -> Reply:
    s, r, c = call.services, call.request, call.command
    assert c.count is not None
    given = dict(c.settings)
    title = given.pop("title", None) or c.text
    count = count_from(c.count, given, title=title, base=None, owner=r.tenant)
    source = source_from(count, given, s.egress) if "source" in given else None
    kept = stored(source)
    async with s.db.begin() as conn:
        if not await count_rows.insert(conn, count, edited_by=r.actor):
            raise CommandError(count_rows.taken(count.id))
        if kept is not None:
            await count_rows.set_source_json(conn, count.id, kept)
        # the place's alerts come here until its admins choose (alerts here)
        await place_alerts.default(conn, r.tenant, r.channel, by=r.actor, at=s.clock.now())
        if not r.tenant_admin:  # an operator's admin: made here, run by them too
            grant = Grant(count.id, GrantKind.USER, r.user_id, r.actor, s.clock.now())
            await grant_rows.grant(conn, grant)
        await audit_rows.record(conn, entry(call, count.id, None, summary(count, kept), "created"))
    await s.count_changed(count.id)
    return Reply(
        f"Created {described(count)}. Follow it in a channel with: subscribe {count.id}; "
        f"enter figures with: update {count.id} " + " ".join(f"{i}=N" for i in count.choice_ids)
    )


@VERBS.verb(
    VerbSpec(
        Verb.EDIT,
        "Admins: change a count's title, labels, rule, figures, source or visibility",
        (CountArg(), EDIT_SETTINGS, TITLE),
        admin="edit a count",
        audits_itself=True,
        form=EDIT_FORM,
    )
)
async def edit(call: Call) -> Reply:
    """Change a count's settings. An edit that changes what its figures mean (the rule, the tie
    holder, the threshold, the ballots received or eligible, the labels a call names) is
    weighed like a tally (``Pipeline.revise``): a call, runoff, determinative state or final
    result it changes is announced as a correction to the count's subscribers. Ballots received
    going down, and the rule of a final count, change only when sent as a correction
    (``correction=yes``)."""
    s, r, c = call.services, call.request, call.command
    assert c.count is not None
    count = await find_count(s.db, c.count, r)
    given = dict(c.settings)
    correction = flag(CORRECTION, given.pop(CORRECTION, "no"))
    title = given.pop("title", None) or c.text
    if not given and not title:
        raise CommandError(f"nothing to change; {call.spec.usage_line()}")
    changed = count_from(count.id, given, title=title, base=count, owner=count.owner)
    if "source" in given and count.owner == OPERATOR:
        raise CommandError(f"the source of {count.id} is set in the configuration file")
    source = source_from(changed, given, s.egress) if "source" in given else None
    async with s.db.connect() as conn:
        last = await tally_rows.last(conn, count.id)
    if last is not None and not correction:
        _published_stays(count, changed, last, call)

    async def change(conn: AsyncConnection) -> None:
        before = await count_rows.source_json(conn, count.id)
        after = before
        if "source" in given:
            after = stored(source)
            await count_rows.set_source_json(conn, count.id, after)
        await count_rows.upsert(conn, changed, edited_by=r.actor)
        detail = "edited as a correction" if correction else "edited"
        record = entry(call, count.id, summary(count, before), summary(changed, after), detail)
        await audit_rows.record(conn, record)

    again = await s.pipeline.revise(
        count, change, actor=r.actor, source=f"admin {r.user_name}", correction=correction
    )
    await s.count_changed(count.id)
    if again is None or again.message is None:
        return Reply(f"Changed {described(changed)}.")
    return Reply(
        f"Changed {described(changed)}. Published as update #{again.tally.seq}: "
        f"{again.message.headline}",
        message=again.message,
    )


def _published_stays(count: Count, changed: Count, last: Tally, call: Call) -> None:
    """Refuse what only a correction may change of published figures: ballots received going
    down, and the rule of a final count."""
    line = " ".join(["edit", count.id, *(f"{k}={v}" for k, v in call.command.settings)])
    again = f"if it is right, send it as a correction: {line} correction=yes"
    received = last.received if last.received is not None else count.received
    if changed.received is not None and received is not None and changed.received < received:
        raise CommandError(
            f"ballots received would go down from {n(received)} to {n(changed.received)}; " + again
        )
    final = last.state is TallyState.FINAL
    if final and (changed.rule != count.rule or changed.received != count.received):
        raise CommandError(f"{count.id} is final: this changes how its result was decided; {again}")


@VERBS.verb(
    VerbSpec(
        Verb.ARCHIVE,
        "Admins: put a count away (no polling, not listed), or take it back",
        (CountArg(), UNDO),
        admin="archive a count",
        audits_itself=True,
    )
)
async def archive(call: Call) -> Reply:
    s, r, c = call.services, call.request, call.command
    assert c.count is not None
    count = await find_count(s.db, c.count, r)
    undo = c.choice == "undo"
    if count.archived is not undo:
        raise CommandError(f"{count.id} is {'not ' if undo else ''}archived")
    async with s.db.begin() as conn:
        await count_rows.set_archived(conn, count.id, not undo, by=r.actor)
        detail = "taken out of the archive" if undo else "archived"
        await audit_rows.record(conn, entry(call, count.id, None, None, detail))
    await s.count_changed(count.id)
    if undo:
        return Reply(f"{count.id} is back: listed, followed and polled again.")
    return Reply(
        f"Archived {count.id}: no longer polled or listed; its history is kept "
        f"(archive {count.id} undo brings it back)."
    )


@VERBS.verb(
    VerbSpec(
        Verb.DELETE,
        "Admins: delete a count and its history for good (asks first)",
        (CountArg(), CONFIRM),
        admin="delete a count",
        audits_itself=True,
    )
)
async def delete(call: Call) -> Reply:
    s, r, c = call.services, call.request, call.command
    assert c.count is not None
    count = await find_count(s.db, c.count, r)
    async with s.db.connect() as conn:
        last = await tally_rows.last(conn, count.id)
        updates = last.seq if last is not None else 0
        channels = len(await sub_rows.for_count(conn, count.id))
    if c.choice != "confirm":
        async with s.db.begin() as conn:
            await audit_rows.record(conn, entry(call, count.id, None, None, "asked to confirm"))
        return Reply(
            f"This deletes {count.id} ({count.title}) for good: its {updates} updates and the "
            f"subscriptions of {channels} channels. To go ahead: delete {count.id} confirm"
        )
    async with s.db.begin() as conn:
        await count_rows.delete(conn, count.id)
        await audit_rows.record(conn, entry(call, count.id, summary(count), None, "deleted"))
    await s.count_changed(count.id)
    back = (
        " It is in the configuration file: it comes back at the next start unless it is "
        "taken out there."
        if count.owner == OPERATOR
        else ""
    )
    return Reply(f"Deleted {count.id}, its {updates} updates and {channels} subscriptions.{back}")
