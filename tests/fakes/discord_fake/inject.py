"""Injecting interactions over the gateway: slash commands, autocomplete, components and modal
submits."""

from __future__ import annotations

from typing import Any

from .interaction import FakeInteraction
from .limits import permissions_for
from .modals import shown_modal, submit_payload
from .models import JSON, Guild
from .payloads import channel as channel_payload
from .payloads import member as member_payload
from .payloads import role as role_payload
from .payloads import user as user_payload
from .state import FakeDiscord


def _find_command(
    fake: FakeDiscord, guild_id: int | None, name: str, *, anywhere: bool = False
) -> JSON | None:
    """The command registered in the guild or globally (with ``anywhere``: in any guild)."""
    scopes = list(fake.registered_commands) if anywhere else [guild_id, None]
    for scope in scopes:
        for cmd in fake.registered_commands.get(scope, []):
            if cmd["name"] == name and cmd.get("type", 1) == 1:
                return cmd
    return None


def _normalize(
    schema: list[JSON] | None, given: list[dict[str, Any]], focused: str | None
) -> list[JSON]:
    out: list[JSON] = []
    names = set()
    for opt in given:
        o = dict(opt)
        name = o.get("name")
        if not isinstance(name, str):
            raise ValueError(f"option without a name: {opt!r}")
        names.add(name)
        spec = None
        if schema is not None:
            spec = next((s for s in schema if s["name"] == name), None)
            if spec is None:
                raise ValueError(f"option {name!r} is not in the registered command")
        if "type" not in o:
            if spec is None:
                raise ValueError(f"option {name!r} needs a 'type' (command not registered)")
            o["type"] = spec["type"]
        if o["type"] in (6, 7, 8, 9):
            o["value"] = str(o["value"])
        if name == focused:
            o["focused"] = True
            o["value"] = str(o.get("value", ""))
        out.append(o)
    if focused is not None and focused not in names:
        raise ValueError(f"focused option {focused!r} is not among the options")
    if schema is not None and focused is None:
        missing = [s["name"] for s in schema if s.get("required") and s["name"] not in names]
        if missing:
            raise ValueError(f"required options missing: {missing}")
    return out


def _resolved(fake: FakeDiscord, guild: Guild | None, channel_id: int, options: list[JSON]) -> JSON:
    resolved: JSON = {}
    chan = fake.channels[channel_id]
    for opt in options:
        kind, value = opt["type"], opt.get("value")
        if kind not in (6, 7, 8, 9) or value is None:
            continue
        oid = int(value)
        if kind in (6, 9) and oid in fake.users:
            resolved.setdefault("users", {})[str(oid)] = user_payload(fake.users[oid])
            member = guild.members.get(oid) if guild is not None else None
            if guild is not None and member is not None:
                perms = permissions_for(guild, oid, chan)
                data = member_payload(member, fake.users[oid], with_user=False, permissions=perms)
                resolved.setdefault("members", {})[str(oid)] = data
        elif kind in (8, 9) and guild is not None and oid in guild.roles:
            resolved.setdefault("roles", {})[str(oid)] = role_payload(guild.roles[oid])
        elif kind == 7 and oid in fake.channels:
            target = fake.channels[oid]
            data = {**channel_payload(target), "permissions": str(fake.bot_permissions(oid))}
            resolved.setdefault("channels", {})[str(oid)] = data
    return resolved


def _base_payload(fake: FakeDiscord, ix: FakeInteraction) -> JSON:
    if ix.guild_id is None:
        return _dm_payload(fake, ix)
    guild = fake.guilds[ix.guild_id]
    chan = fake.channels[ix.channel_id]
    member = guild.members[ix.user_id]
    perms = permissions_for(guild, ix.user_id, chan)
    return {
        "id": str(ix.id),
        "application_id": str(fake.app_id),
        "type": ix.type,
        "guild_id": str(guild.id),
        "guild": {"id": str(guild.id), "locale": "en-US", "features": []},
        "channel_id": str(chan.id),
        "channel": channel_payload(chan),
        "member": member_payload(member, fake.users[ix.user_id], permissions=perms),
        "token": ix.token,
        "version": 1,
        "app_permissions": str(fake.bot_permissions(chan.id)),
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": str(guild.id)},
        "context": 0,
        "attachment_size_limit": fake.attachment_size_limit,
    }


def _dm_payload(fake: FakeDiscord, ix: FakeInteraction) -> JSON:
    """A command in the user's DM with the bot: no guild, no member, the user; no permissions."""
    chan = fake.channels[ix.channel_id]
    return {
        "id": str(ix.id),
        "application_id": str(fake.app_id),
        "type": ix.type,
        "channel_id": str(chan.id),
        "channel": channel_payload(chan),
        "user": user_payload(fake.users[ix.user_id]),
        "token": ix.token,
        "version": 1,
        "app_permissions": "0",
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": "0"},
        "context": 1,
        "attachment_size_limit": fake.attachment_size_limit,
    }


def _check_where(fake: FakeDiscord, guild_id: int | None, channel_id: int, user_id: int) -> None:
    if guild_id is None:
        chan = fake.channels.get(channel_id)
        if chan is None or chan.type != 1 or chan.recipient_id != user_id:
            raise ValueError(f"channel {channel_id} is not the DM of user {user_id}")
        if not fake.gateway.live_sessions(None):
            raise RuntimeError("no connected gateway session receives DM events")
        return
    guild = fake.guilds.get(guild_id)
    if guild is None:
        raise ValueError(f"unknown guild {guild_id}")
    chan = fake.channels.get(channel_id)
    if chan is None or chan.deleted or chan.guild_id != guild_id:
        raise ValueError(f"channel {channel_id} is not a live channel of guild {guild_id}")
    if user_id not in guild.members:
        raise ValueError(f"user {user_id} is not a member of guild {guild_id}: add_member first")
    if not fake.gateway.live_sessions(guild_id):
        raise RuntimeError("no connected gateway session receives this guild's events")


async def _offered_in_dms(cmd: JSON | None) -> bool:
    """Whether Discord shows the command in a DM with the bot (its contexts, else its
    dm_permission)."""
    if cmd is None:
        return True
    contexts = cmd.get("contexts")
    if contexts is not None:
        return 1 in contexts
    return bool(cmd.get("dm_permission", True))


async def _send(fake: FakeDiscord, ix: FakeInteraction) -> FakeInteraction:
    fake.interactions.append(ix)
    ix.injected_at = fake.clock()
    fake.gateway.dispatch("INTERACTION_CREATE", ix.payload, ix.guild_id, None)
    await fake.gateway.flush()
    return ix


async def inject_command(
    fake: FakeDiscord,
    guild_id: int | None,
    channel_id: int,
    user_id: int,
    name: str,
    options: list[dict[str, Any]],
    *,
    subcommand: str | None,
    focused: str | None,
    allow_unregistered: bool,
    allow_guild_only: bool = False,
) -> FakeInteraction:
    """A command in guild ``guild_id``, or (``None``) in the user's DM with the bot: there,
    a command Discord does not offer in DMs (guild-only, or registered in a guild) is refused
    unless ``allow_guild_only`` (a request Discord would not send, to test what the bot makes
    of it)."""
    _check_where(fake, guild_id, channel_id, user_id)
    cmd = _find_command(fake, guild_id, name, anywhere=guild_id is None and allow_guild_only)
    if cmd is None and not allow_unregistered:
        raise LookupError(f"/{name} is not registered (global or in guild {guild_id})")
    if guild_id is None and not allow_guild_only and not _offered_in_dms(cmd):
        raise ValueError(f"/{name} is a guild-only command: Discord does not offer it in DMs")
    path = subcommand.split() if subcommand else []
    schema: list[JSON] | None = cmd.get("options", []) if cmd is not None else None
    for part in path:
        if schema is None:
            break
        node = next((s for s in schema if s["name"] == part and s["type"] in (1, 2)), None)
        if node is None:
            raise ValueError(f"/{name} has no subcommand {part!r}")
        schema = node.get("options", [])
    leaf = _normalize(schema, options, focused)
    wrapped = leaf
    for depth, part in reversed(list(enumerate(path))):
        kind = 1 if depth == len(path) - 1 else 2
        wrapped = [{"name": part, "type": kind, "options": wrapped}]

    ix = FakeInteraction(
        fake,
        type=2 if focused is None else 4,
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=user_id,
        name=name,
    )
    data: JSON = {
        "id": cmd["id"] if cmd is not None else str(fake.snowflakes.next()),
        "name": name,
        "type": 1,
        "options": wrapped,
    }
    if cmd is not None and "guild_id" in cmd:
        data["guild_id"] = cmd["guild_id"]
    guild = fake.guilds[guild_id] if guild_id is not None else None
    resolved = _resolved(fake, guild, channel_id, leaf)
    if resolved:
        data["resolved"] = resolved
    ix.payload = {**_base_payload(fake, ix), "data": data}
    return await _send(fake, ix)


async def inject_component(
    fake: FakeDiscord,
    guild_id: int,
    channel_id: int,
    user_id: int,
    message_id: int,
    custom_id: str,
    component_type: int,
    values: list[str] | None,
) -> FakeInteraction:
    _check_where(fake, guild_id, channel_id, user_id)
    msg = fake._messages.get(message_id)
    if msg is None or msg.deleted or msg.channel_id != channel_id:
        raise ValueError(f"message {message_id} is not in channel {channel_id}")
    if custom_id not in _custom_ids(msg.components):
        raise ValueError(f"no component {custom_id!r} on message {message_id}")
    if msg.ephemeral:  # shown to the member who was answered, and to nobody else
        shown_to = {i.user_id for i in fake.interactions if i.id == msg.interaction_id}
        if user_id not in shown_to:
            raise ValueError(f"message {message_id} is ephemeral: only its member sees it")
    ix = FakeInteraction(
        fake,
        type=3,
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=user_id,
        name=custom_id,
        component_message_id=message_id,
    )
    data: JSON = {"custom_id": custom_id, "component_type": component_type}
    if values is not None:
        data["values"] = values
    ix.payload = {**_base_payload(fake, ix), "data": data, "message": fake.message_json(msg)}
    return await _send(fake, ix)


def _custom_ids(components: list[JSON]) -> set[str]:
    """The custom ids of a message's components (in action rows, at any depth)."""
    found: set[str] = set()
    for item in components:
        if isinstance(item.get("custom_id"), str):
            found.add(item["custom_id"])
        found |= _custom_ids(item.get("components") or [])
    return found


async def inject_modal_submit(
    fake: FakeDiscord,
    shown: FakeInteraction,
    user_id: int,
    custom_id: str | None,
    values: dict[str, str],
    *,
    forged: bool = False,
) -> FakeInteraction:
    shown_modal(fake, shown, shown.user_id if forged else user_id)
    assert shown.modal is not None
    if shown.modal_submitted and not forged:
        raise ValueError("that modal was submitted already (Discord closes it)")
    _check_where(fake, shown.guild_id, shown.channel_id, user_id)
    modal_id = str(shown.modal.get("custom_id"))
    custom_id = modal_id if custom_id is None else custom_id
    data = submit_payload(shown, modal_id, values)
    data["custom_id"] = custom_id
    if custom_id != modal_id and not forged:
        raise ValueError(f"no modal {custom_id!r} was shown to this member")
    shown.modal_submitted = shown.modal_submitted or not forged
    ix = FakeInteraction(
        fake,
        type=5,
        guild_id=shown.guild_id,
        channel_id=shown.channel_id,
        user_id=user_id,
        name=str(custom_id),
    )
    ix.payload = {**_base_payload(fake, ix), "data": data}
    return await _send(fake, ix)
