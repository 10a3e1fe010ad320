"""Who may push to a count, and make one, through the ops server: its owner, authenticated.

- The operator's counts: requests signed with the operator's push secret (``bot.ops.signing``).
- A tenant's counts (a Discord server's, a Slack workspace's): ``Authorization: Bearer
  tbk_...``, a key one of its admins made with ``apikey create`` (``bot.store.api_keys``:
  kept hashed, compared in constant time). A key pushes only its own place's counts; another
  place's private count is "unknown" to it, exactly like a name that does not exist.

``POST /api/counts`` makes a count for whoever the request authenticates as (the operator, or
the key's place), from a JSON body::

    {"id": "local-7", "title": "Local 7 strike vote",
     "choices": [{"id": "yes", "label": "Strike"}, {"id": "no", "label": "No strike"}],
     "rule": "majority", "tie_holder": "no", "eligible": 450, "received": 412, "public": false}

201 ``{"result": "created", "count"}``; 409 the name is taken; 422 not a valid count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.domain.model import (
    MAX_FIGURE,
    OPERATOR,
    Choice,
    Count,
    CountStatus,
    DecisionRule,
    RuleKind,
)
from bot.errors import ConfigError, RequestError, StoreError
from bot.store import Database
from bot.store import api_keys as key_rows
from bot.store import counts as count_rows
from bot.store.api_keys import ApiKey

BEARER = "Bearer "


def bearer(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, or None without one."""
    given = headers.get("Authorization")
    if given is None or not given.startswith(BEARER):
        return None
    return given[len(BEARER) :].strip()


async def key_of(db: Database, token: str) -> ApiKey:
    """The live key ``token`` is; RequestError 401 otherwise (the same for every reason)."""
    try:
        async with db.connect() as conn:
            key = await key_rows.check(conn, token)
    except StoreError as exc:
        raise RequestError(f"the store failed: {exc}", status=503) from None
    if key is None:
        raise RequestError("unknown or revoked API key", status=401)
    return key


async def tenant_count(db: Database, count_id: str, key: ApiKey) -> Count:
    """The count ``key`` may push: its own place's; 403 for another's public count; 404 (like
    a name that does not exist, naming only the key's own counts) for anything else."""
    try:
        async with db.connect() as conn:
            count = await count_rows.get(conn, count_id)
            if count is not None and count.owner == key.owner and not count.archived:
                return count
            mine = [c.id for c in await count_rows.all_counts(conn) if c.owner == key.owner]
    except StoreError as exc:
        raise RequestError(f"the store failed: {exc}", status=503) from None
    if count is not None and count.public and not count.archived:
        raise RequestError(
            f"{count.id} is not one of this key's counts: only its owner pushes to it",
            status=403,
        )
    raise RequestError(
        f"unknown count {count_id[:64]!r}; this key's counts are {', '.join(mine) or 'none'}",
        status=404,
    )


def operator_only(count: Count) -> None:
    """The push secret is the operator's: it pushes to the operator's counts only."""
    if count.owner != OPERATOR:
        raise RequestError(
            f"{count.id} belongs to {count.owner}: push to it with one of its API keys "
            "(apikey create), not the operator's secret",
            status=403,
        )


class _NewChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    label: str | None = None


class NewCount(BaseModel):
    """The body of ``POST /api/counts``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    title: str
    choices: list[_NewChoice]
    rule: Literal["majority", "plurality", "threshold"] = "majority"
    tie_holder: str | None = None
    threshold: str | None = None
    eligible: int | None = Field(default=None, ge=0, le=MAX_FIGURE)
    received: int | None = Field(default=None, ge=0, le=MAX_FIGURE)
    public: bool = False


def read_new_count(raw: bytes, owner: str) -> Count:
    """The count a ``POST /api/counts`` body describes, owned by ``owner``; 400 or 422."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(f"the body is not JSON: {exc}", status=400) from None
    try:
        body = NewCount.model_validate(data)
        threshold = Fraction(body.threshold) if body.threshold is not None else None
        return Count(
            id=body.id,
            title=body.title,
            choices=tuple(Choice(c.id, c.label or c.id) for c in body.choices),
            rule=DecisionRule(RuleKind(body.rule), body.tie_holder, threshold),
            eligible=body.eligible,
            received=body.received,
            status=CountStatus.COUNTING,
            owner=owner,
            public=body.public,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "body"
        raise RequestError(f"{where}: {error['msg']}", status=422) from None
    except (ConfigError, ValueError, ZeroDivisionError) as exc:
        raise RequestError(str(exc), status=422) from None
