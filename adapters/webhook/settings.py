"""The ``[webhook]`` table: the operator's targets and how they are sent to.

    [webhook]
    allow_private_addresses = false   # true: targets may be inside the operator's network
    timeout = 10                      # seconds a request may take, connect to answer
    max_body = 262144                 # bytes a body may have; a final's chart is left out past it
    disable_after = 10                # failures in a row before a target is disabled
    dedupe_hours = 24                 # how long receivers keep idempotency keys (see the how-to)
    page_base = "https://counts.example.org"   # the public page's base, for the JSON's url
    allow_chat_targets = false        # true: a place's admins may add targets (/count webhook)
    max_chat_targets = 20             # targets one place may add in chat

    [[webhook.targets]]
    name = "newsroom"                 # webhook:operator/newsroom
    format = "json"                   # or "slack" (Mattermost too) or "teams"
    counts = ["bessemer-2021"]        # subscribed when the bot starts
    mode = "events"                   # as /count subscribe: events, all or live

    [webhook.limits]                  # a bucket's window by name
    "posts per target" = [1, 1.0]

Secrets never come from the file. A target's URL is one (anyone who has a Slack or Teams
webhook URL may post there): ``TALLYBOT_WEBHOOK_<NAME>_URL``; a ``json`` target signs with
``TALLYBOT_WEBHOOK_<NAME>_SECRET``; each from the environment or ``NAME_FILE``. ``<NAME>`` is
the target's name upper-cased, ``-`` as ``_``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from bot.platform import (
    Flag,
    LimitsSetting,
    PlatformTable,
    Text,
    bad,
    between,
    describe,
    one_of,
    problems,
    whole_between,
)

Format = Literal["json", "slack", "teams"]
FORMATS = ["json", "slack", "teams"]
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
MAX_TARGETS = 5000
"""Targets one ``[webhook]`` table may list."""
MAX_COUNTS = 100
"""Counts one target may list."""


def _name(value: str) -> str:
    if not NAME.fullmatch(value):
        raise bad(
            f"must be 1 to 40 of a-z, 0-9 and -, starting with a letter or digit, "
            f"got {describe(value)}"
        )
    return value


def env_name(target: str, what: str) -> str:
    """``TALLYBOT_WEBHOOK_NEWSROOM_URL``: the variable a target's secret is read from."""
    return f"TALLYBOT_WEBHOOK_{target.upper().replace('-', '_')}_{what}"


class Target(PlatformTable):
    """One ``[[webhook.targets]]`` table."""

    name: Annotated[Text, AfterValidator(_name)]
    format: Annotated[Format, one_of(FORMATS, "format")] = "json"
    counts: Annotated[tuple[str, ...], Field(max_length=MAX_COUNTS)] = ()
    mode: Annotated[Literal["events", "all", "live"], one_of(["events", "all", "live"], "mode")] = (
        "events"
    )

    @property
    def url_env(self) -> str:
        return env_name(self.name, "URL")

    @property
    def secret_env(self) -> str | None:
        """Where a ``json`` target's signing secret is read from (the others sign nothing)."""
        return env_name(self.name, "SECRET") if self.format == "json" else None


class WebhookSettings(PlatformTable):
    allow_private_addresses: Flag = False
    timeout: Annotated[float, between(0.1, 120, " seconds")] = 10.0
    max_body: Annotated[int, whole_between(4096, 4 * 1024 * 1024)] = 256 * 1024
    disable_after: Annotated[int, whole_between(1, 1000)] = 10
    dedupe_hours: Annotated[float, between(0.1, 24 * 30, " hours")] = 24.0
    page_base: Text | None = None
    allow_chat_targets: Flag = False
    """A place's admins may register targets in chat (``/count webhook``, :mod:`.chat`)."""
    max_chat_targets: Annotated[int, whole_between(1, 1000)] = 20
    """Targets one place may register in chat."""
    targets: Annotated[tuple[Target, ...], Field(max_length=MAX_TARGETS)] = ()
    limits: LimitsSetting = Field(default_factory=dict)
    """``[webhook.limits]``: buckets of ``adapters.webhook.adapter.LIMITS`` changed by name."""

    def on(self) -> bool:
        return bool(self.targets) or self.allow_chat_targets

    @model_validator(mode="after")
    def _unique(self) -> WebhookSettings:
        seen: set[str] = set()
        found = []
        for i, t in enumerate(self.targets):
            if t.name in seen:
                found.append((("targets", i, "name"), f"a second target named {t.name!r}"))
            seen.add(t.name)
        problems("webhook", found)
        return self
