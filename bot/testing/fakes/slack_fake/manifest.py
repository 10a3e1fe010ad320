"""The Slack app manifest (``config/slack-manifest.yml``) as Slack applies it to the fake.

Slack does with an app what its manifest grants and no more: a Web API method whose scope the
manifest lacks answers ``missing_scope``, an event it does not list is never sent, a modal's
``view_submission`` is sent only with interactivity on, and a slash command's text has its
``@name`` / ``#channel`` turned into ``<@U…|name>`` / ``<#C…|name>`` only with
``should_escape: true`` (else it arrives as typed). :class:`Manifest` holds those facts, read
from the shipped file by :func:`load_manifest` (a reader of the small YAML subset manifests
use: nested mappings, lists, quoted and folded scalars, comments)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).resolve().parents[4] / "config" / "slack-manifest.yml"

METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    # Slack's documented bot-token scopes per method (any one of them suffices).
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.delete": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "conversations.info": ("channels:read", "groups:read"),
    "conversations.history": ("channels:history", "groups:history"),
    "conversations.replies": ("channels:history", "groups:history"),
    "pins.add": ("pins:write",),
    "pins.remove": ("pins:write",),
    "users.info": ("users:read",),
    "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
}
"""Methods not listed (auth.test, views.open, apps.connections.open) need no bot scope."""


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

    def missing_scope(self, method: str) -> str | None:
        """The scope(s) ``method`` needs that the manifest does not grant, else None."""
        needed = METHOD_SCOPES.get(method, ())
        if not needed or any(s in self.scopes for s in needed):
            return None
        return ",".join(needed)


def load_manifest(path: Path = SHIPPED) -> Manifest:
    tree = parse_yaml(path.read_text())
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


# ----------------------------------------------------------------- the YAML subset


_KEY = re.compile(r"([^\s#'\"][^:]*?):(?:\s+(.*)|$)")


def _scalar(text: str) -> Any:
    text = text.strip()
    if text[:1] in "\"'":
        quote = text[0]
        return text[1 : text.index(quote, 1)]
    text = text.split(" #", 1)[0].strip()
    return {"true": True, "false": False}.get(text, int(text) if text.isdigit() else text)


def _lines(source: str) -> list[tuple[int, str]]:
    out = []
    for raw in source.splitlines():
        stripped = raw.strip()
        if "'" not in stripped and '"' not in stripped:
            stripped = re.sub(r"(^|\s+)#.*$", "", stripped)
        if stripped and not stripped.startswith("#"):
            out.append((len(raw) - len(raw.lstrip(" ")), stripped))
    return out


def parse_yaml(source: str) -> dict[str, Any]:
    lines = _lines(source)
    value, _ = _block(lines, 0, 0)
    if not isinstance(value, dict):
        raise ValueError("a manifest is a mapping")
    return value


def _block(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    if i < len(lines) and lines[i][1].startswith("- "):
        items: list[Any] = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
            rest = lines[i][1][2:]
            if _KEY.match(rest):
                # a mapping as a list item: its first key on the dash line
                sub = [(indent + 2, rest), *lines[i + 1 :]]
                item, used = _mapping(sub, 0, indent + 2)
                items.append(item)
                i += used
            else:
                items.append(_scalar(rest))
                i += 1
        return items, i
    return _mapping(lines, i, indent)


def _mapping(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent and not lines[i][1].startswith("- "):
        match = _KEY.match(lines[i][1])
        if match is None:
            raise ValueError(f"not a key: {lines[i][1]!r}")
        key, rest = match[1], (match[2] or "").strip()
        i += 1
        if rest.startswith(">") or rest.startswith("|"):
            parts = []
            while i < len(lines) and lines[i][0] > indent:
                parts.append(lines[i][1])
                i += 1
            out[key] = " ".join(parts)
        elif rest and not rest.startswith("#"):
            out[key] = _scalar(rest)
        elif i < len(lines) and (
            lines[i][0] > indent or (lines[i][0] == indent and lines[i][1].startswith("- "))
        ):
            out[key], i = _block(lines, i, lines[i][0])
        else:
            out[key] = None
    return out, i
