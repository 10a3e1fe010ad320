"""Modals: ``views.open`` with a slash command's trigger_id, and the ``view_submission`` a user
sends by filling one in.

Limits as Slack documents them: a trigger_id is good for 3 s and once; a modal's title at most
24 characters (plain_text), submit/close 24, callback_id 255, private_metadata 3000, at most 100
blocks; an input block's label 2000, block_id 255, a plain_text_input's action_id 255,
placeholder 150, max_length 3000, an initial_value a string within its max_length. A submit
carries each input as the user left it: the value given for it, else its initial_value."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .args import JsonDict
from .limits import SlackError
from .manifest import Manifest
from .records import ACK_DEADLINE_S, SocketDelivery
from .workspace import Workspace

TRIGGER_TTL_S = 3.0
LIMITS = {"title": 24, "submit": 24, "close": 24}


@dataclass
class Trigger:
    user_id: str
    team_id: str
    issued_at: float
    used: bool = False


@dataclass
class OpenedView:
    """A modal the app opened, and the submit it got (with the app's answer to it)."""

    id: str
    user_id: str
    team_id: str
    view: JsonDict
    submitted: bool = False
    answers: list[dict[str, Any] | None] = field(default_factory=list)


def _too_long(value: Any, most: int) -> bool:
    return not isinstance(value, str) or len(value) > most


def _check(view: Any) -> JsonDict:
    if isinstance(view, str):
        try:
            view = json.loads(view)
        except ValueError:
            raise SlackError("invalid_arguments") from None
    if not isinstance(view, dict) or view.get("type") != "modal":
        raise SlackError("invalid_arguments")
    for key, most in LIMITS.items():
        text = view.get(key)
        if text is None and key != "title":
            continue
        if not isinstance(text, dict) or text.get("type") != "plain_text":
            raise SlackError("invalid_arguments")
        if _too_long(text.get("text"), most):
            raise SlackError("invalid_arguments")
    if _too_long(view.get("callback_id", ""), 255):
        raise SlackError("invalid_arguments")
    if _too_long(view.get("private_metadata", ""), 3000):
        raise SlackError("invalid_arguments")
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or len(blocks) > 100:
        raise SlackError("invalid_arguments")
    inputs = [b for b in blocks if isinstance(b, dict) and b.get("type") == "input"]
    if inputs and "submit" not in view:
        raise SlackError("invalid_arguments")
    for block in inputs:
        element = block.get("element") or {}
        label = block.get("label") or {}
        if _too_long(label.get("text"), 2000) or _too_long(block.get("block_id"), 255):
            raise SlackError("invalid_arguments")
        if element.get("type") != "plain_text_input" or _too_long(element.get("action_id"), 255):
            raise SlackError("invalid_arguments")
        placeholder = element.get("placeholder") or {"text": ""}
        if _too_long(placeholder.get("text"), 150) or element.get("max_length", 0) > 3000:
            raise SlackError("invalid_arguments")
        if "initial_value" in element and _too_long(
            element["initial_value"], element.get("max_length", 3000)
        ):
            raise SlackError("invalid_arguments")
    return view


class Views:
    """The modals opened through ``views.open`` (a handler of the fake's Web API)."""

    def __init__(self, workspace: Workspace, clock: Callable[[], float]) -> None:
        self._ws = workspace
        self._clock = clock
        self.triggers: dict[str, Trigger] = {}
        self.opened: list[OpenedView] = []

    def issue(self, trigger_id: str, user_id: str, team_id: str) -> None:
        """A trigger_id Slack gave the app (with a slash command)."""
        self.triggers[trigger_id] = Trigger(user_id, team_id, self._clock())

    def open(self, args: JsonDict) -> JsonDict:
        trigger = self.triggers.get(str(args.get("trigger_id")))
        if trigger is None or trigger.used:
            raise SlackError("invalid_trigger_id")
        if self._clock() - trigger.issued_at > TRIGGER_TTL_S:
            raise SlackError("expired_trigger_id")
        view = _check(args.get("view"))
        trigger.used = True
        opened = OpenedView(self._ws.next_id("V"), trigger.user_id, trigger.team_id, view)
        self.opened.append(opened)
        return {"view": self._api_view(opened, {})}

    def _api_view(self, opened: OpenedView, values: dict[str, dict[str, Any]]) -> JsonDict:
        return {
            **opened.view,
            "id": opened.id,
            "team_id": opened.team_id,
            "app_id": self._ws.app_id,
            "bot_id": self._ws.bot_id,
            "state": {"values": values},
            "hash": f"{opened.id}.hash",
        }

    def submission(self, opened: OpenedView, values: dict[str, str], user_id: str) -> JsonDict:
        """The ``view_submission`` payload of ``opened`` filled in with ``values`` (by block_id)
        by ``user_id``, who must be the one it was opened for."""
        if opened not in self.opened or opened.submitted:
            raise ValueError("that modal is not open")
        if user_id != opened.user_id:
            raise ValueError("the modal was opened for another user")
        blocks = {b["block_id"]: b for b in opened.view["blocks"] if b.get("type") == "input"}
        if set(values) - set(blocks):
            raise ValueError(f"the modal has no input {sorted(set(values) - set(blocks))}")
        state: dict[str, dict[str, Any]] = {}
        for block_id, block in blocks.items():
            initial = block["element"].get("initial_value")
            value = values.get(block_id, initial) or None
            if value is None and not block.get("optional", False):
                raise ValueError(f"input {block_id!r} is required: Slack would not submit")
            action = block["element"]["action_id"]
            state[block_id] = {action: {"type": "plain_text_input", "value": value}}
        opened.submitted = True
        return {
            "type": "view_submission",
            "team": {"id": opened.team_id, "domain": self._ws.teams[opened.team_id][0]},
            "user": {"id": user_id, "team_id": opened.team_id},
            "api_app_id": self._ws.app_id,
            "token": "fake-verification-token",
            "trigger_id": self._ws.next_id("TR"),
            "view": self._api_view(opened, state),
            "response_urls": [],
            "is_enterprise_install": False,
        }


class _Sender(Protocol):
    """What :class:`Modals` reads of ``fake.FakeSlack``."""

    views: Views
    manifest: Manifest

    async def _deliver(
        self,
        envelope_type: str,
        payload: dict[str, Any],
        accepts_response_payload: bool,
        extra: dict[str, Any],
        response_url: str | None,
        ack_wait: float,
    ) -> SocketDelivery: ...


class Modals:
    """The modal half of ``fake.FakeSlack`` (a mixin)."""

    async def send_view_submission(
        self: _Sender, opened: OpenedView, values: dict[str, str], *, user_id: str | None = None
    ) -> SocketDelivery:
        """Send an ``interactive`` envelope: ``opened`` submitted with ``values`` (by
        block_id); return once acked (its payload is the app's answer, e.g. errors).

        Slack sends view_submission only to an app with interactivity on: with the manifest's
        off, the user's submit goes nowhere, and this raises."""
        if not self.manifest.interactivity:
            raise ValueError("interactivity is off in the manifest: Slack sends no view_submission")
        payload = self.views.submission(opened, values, user_id or opened.user_id)
        wait = ACK_DEADLINE_S + 1.0
        delivery = await self._deliver("interactive", payload, True, {}, None, wait)
        opened.answers.append(delivery.ack_payload)
        return delivery
