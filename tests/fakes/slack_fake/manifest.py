"""The Slack app manifest (``config/slack-manifest.yml``) as Slack applies it to the fake.

Slack does with an app what its manifest grants and no more: a Web API method whose scope the
manifest lacks answers ``missing_scope``, an event it does not list is never sent, a modal's
``view_submission`` is sent only with interactivity on, and a slash command's text has its
``@name`` / ``#channel`` turned into ``<@U…|name>`` / ``<#C…|name>`` only with
``should_escape: true`` (else it arrives as typed). :class:`Manifest` holds those facts, read
from the shipped file by :func:`load_manifest` (PyYAML's safe loader: the YAML as Slack reads
it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SHIPPED = Path(__file__).resolve().parents[3] / "config" / "slack-manifest.yml"

METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    # Slack's documented bot-token scopes per method (any one of them suffices).
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.delete": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "conversations.info": ("channels:read", "groups:read"),
    "conversations.history": ("channels:history", "groups:history"),
    "conversations.replies": ("channels:history", "groups:history"),
    "conversations.open": ("im:write", "mpim:write", "channels:manage", "groups:write"),
    "pins.add": ("pins:write",),
    "pins.remove": ("pins:write",),
    "users.info": ("users:read",),
    "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
}
"""Methods not listed (auth.test, views.open, apps.connections.open) need no bot scope."""
IM_READS = ("conversations.history", "conversations.replies")
"""Reads whose scope depends on the conversation: in a direct message, ``im:history``."""


@dataclass(frozen=True)
class SlashCommand:
    command: str
    usage_hint: str
    should_escape: bool


@dataclass(frozen=True)
class Manifest:
    scopes: frozenset[str]
    bot_events: frozenset[str]
    interactivity: bool
    commands: dict[str, SlashCommand]

    def missing_scope(self, method: str, *, im: bool = False) -> str | None:
        """The scope(s) ``method`` needs that the manifest does not grant, else None; ``im``:
        it reads a direct message (``conversations.history`` there needs ``im:history``)."""
        needed = METHOD_SCOPES.get(method, ())
        if im and method in IM_READS:
            needed = ("im:history",)
        if not needed or any(s in self.scopes for s in needed):
            return None
        return ",".join(needed)


def load_manifest(path: Path = SHIPPED) -> Manifest:
    # libyaml's safe loader (in C): what yaml.safe_load reads, read once per fake in a few
    # milliseconds rather than 40 (the fake is built for most Slack tests).
    tree: Any = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: a manifest is a mapping")
    features, settings = tree.get("features", {}), tree.get("settings", {})
    commands = {
        c["command"]: SlashCommand(
            c["command"], str(c.get("usage_hint", "")), c.get("should_escape") is True
        )
        for c in features.get("slash_commands", [])
    }
    return Manifest(
        scopes=frozenset(tree.get("oauth_config", {}).get("scopes", {}).get("bot", [])),
        bot_events=frozenset(settings.get("event_subscriptions", {}).get("bot_events", [])),
        interactivity=settings.get("interactivity", {}).get("is_enabled") is True,
        commands=commands,
    )
