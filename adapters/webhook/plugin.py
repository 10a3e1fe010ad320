"""Webhooks as a tallybot plug-in (the ``tallybot.adapters`` entry point ``webhook``).

On when ``[webhook]`` lists a target or lets places register their own (``allow_chat_targets``:
the ``/count webhook`` verb, on every platform, :mod:`.chat`). Nobody types commands on a
webhook: the only requests made on this platform are the plug-in's own, subscribing a target to
the counts its table lists (the operator's config), so they are the operator's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.platform import AdminPolicy, Asker, Context, Plugin, SecretNeed, VerbSpec, Verdict

from .settings import WebhookSettings
from .tables import TABLES

if TYPE_CHECKING:
    from .adapter import WebhookAdapter


class ConfigIsOperator(AdminPolicy):
    """The operator's config, the only one who asks anything here, is the operator."""

    def verdict(self, asker: Asker) -> Verdict:
        return Verdict(True, tenant_admin=True, home=True)


def build(settings: WebhookSettings, context: Context) -> WebhookAdapter:
    from .adapter import WebhookAdapter

    return WebhookAdapter(settings, context)


def secrets(settings: WebhookSettings) -> tuple[SecretNeed, ...]:
    """Each target's URL, and a ``json`` target's signing secret."""
    needs = [SecretNeed(t.url_env) for t in settings.targets]
    needs += [SecretNeed(t.secret_env) for t in settings.targets if t.secret_env is not None]
    return tuple(needs)


def verbs(settings: WebhookSettings) -> list[tuple[VerbSpec, Any]]:
    """``/count webhook``, where the operator allows targets registered in chat."""
    from .chat import SPEC, handler

    return [(SPEC, handler(settings))] if settings.allow_chat_targets else []


PLUGIN: Plugin[WebhookSettings] = Plugin(
    name="webhook",
    settings=WebhookSettings,
    build=build,
    secrets=secrets,
    verbs=verbs,
    tables=TABLES,
    admins=lambda settings: ConfigIsOperator(),
    place="target",
    channel_example="webhook:operator/newsroom",
)
