"""Slack installations and OAuth states in tallybot's own store, for bolt's OAuth flow.

slack_sdk ships installation and state stores on SQLAlchemy, but synchronous ones: on the
event loop they would block every other task while the database answers. These two implement
slack_sdk's async interfaces on :class:`bot.store.Database` (SQLite or PostgreSQL, the tables
``slack_installations``, ``slack_bots`` and ``oauth_states``, the plug-in's own:
:mod:`adapters.slack.tables`).

Installations are kept the way slack_sdk's own stores keep them: one row per installation,
the latest one wins; a bot row per installation with a bot token. The bot token is stored as
Slack gave it (the database is as sensitive as the tokens in the environment); it is never
logged, and nothing tallybot shows or answers contains it.

Every install, uninstall and revocation is written to the audit log, in the same transaction
(actions ``slack install``, ``slack uninstall``, ``slack bot token revoked``, ``slack user token
revoked``; the tokens never).

A state is a random value handed out with an install link (``/slack/install``), usable once
(``consume`` deletes it) and only until it expires, by the injected clock.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from slack_bolt.error import BoltError
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from sqlalchemy import ColumnElement, Table, and_, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.slack.tables import oauth_states, slack_bots, slack_installations
from bot.platform import AuditEntry, Clock, Database, StoreError, record

log = logging.getLogger(__name__)

STATE_SECONDS = 600
"""How long an install link's state stays usable (Slack's and bolt's default: 10 minutes)."""


def _as_json(values: dict[str, Any]) -> str:
    """slack_sdk's model as JSON text: its datetimes as Unix times, which its models take back."""
    return json.dumps(
        {k: v.timestamp() if isinstance(v, datetime) else v for k, v in values.items()}
    )


def _of(
    table: Table, client_id: str, enterprise_id: str | None, team_id: str | None
) -> ColumnElement[bool]:
    def same(column: str, value: str | None) -> ColumnElement[bool]:
        return table.c[column].is_(None) if value is None else table.c[column] == value

    return and_(
        table.c.client_id == client_id,
        same("enterprise_id", enterprise_id),
        same("team_id", team_id),
    )


class StoreInstallations(AsyncInstallationStore):
    """slack_sdk's ``AsyncInstallationStore`` on the store, for one app (``client_id``);
    ``on_save`` is told the workspace of each installation saved."""

    def __init__(
        self,
        db: Database,
        client_id: str,
        clock: Clock,
        *,
        on_save: Callable[[str | None], None] | None = None,
    ) -> None:
        self.db = db
        self.client_id = client_id
        self.clock = clock
        self.on_save = on_save

    @property
    def logger(self) -> logging.Logger:
        return log

    async def _audit(
        self, conn: AsyncConnection, team_id: str | None, user_id: str | None, action: str
    ) -> None:
        where = f"the Slack workspace {team_id}"
        actor = f"slack:{team_id}" + (f"/{user_id}" if user_id else "")
        await record(
            conn,
            AuditEntry(
                at=self.clock.now(),
                actor=actor,
                action=action,
                detail=f"{action} in {where} (app {self.client_id})",
            ),
        )

    async def async_save(self, installation: Installation) -> None:
        values = installation.to_dict_for_copying()
        row = {
            "client_id": self.client_id,
            "enterprise_id": installation.enterprise_id,
            "team_id": None if installation.is_enterprise_install else installation.team_id,
            "is_enterprise_install": bool(installation.is_enterprise_install),
            "installed_at": self.clock.now(),
        }
        try:
            async with self.db.begin() as conn:
                await conn.execute(
                    insert(slack_installations).values(
                        **row, user_id=installation.user_id, data=_as_json(values)
                    )
                )
                if installation.bot_token is not None:
                    bot = installation.to_bot().to_dict_for_copying()
                    await conn.execute(insert(slack_bots).values(**row, data=_as_json(bot)))
                await self._audit(conn, installation.team_id, installation.user_id, "slack install")
        except StoreError as exc:
            raise BoltError(f"the installation could not be stored: {exc}") from exc
        if self.on_save is not None:
            self.on_save(installation.team_id)

    async def async_save_bot(self, bot: Bot) -> None:
        async with self.db.begin() as conn:
            await conn.execute(
                insert(slack_bots).values(
                    client_id=self.client_id,
                    enterprise_id=bot.enterprise_id,
                    team_id=None if bot.is_enterprise_install else bot.team_id,
                    is_enterprise_install=bool(bot.is_enterprise_install),
                    installed_at=self.clock.now(),
                    data=_as_json(bot.to_dict_for_copying()),
                )
            )

    async def async_find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        team = None if is_enterprise_install else team_id
        async with self.db.connect() as conn:
            data = await conn.scalar(
                select(slack_bots.c.data)
                .where(_of(slack_bots, self.client_id, enterprise_id, team))
                .order_by(slack_bots.c.id.desc())
                .limit(1)
            )
        return None if data is None else Bot(**json.loads(data))

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        team = None if is_enterprise_install else team_id
        query = select(slack_installations.c.data).where(
            _of(slack_installations, self.client_id, enterprise_id, team)
        )
        if user_id is not None:
            query = query.where(slack_installations.c.user_id == user_id)
        async with self.db.connect() as conn:
            data = await conn.scalar(query.order_by(slack_installations.c.id.desc()).limit(1))
        if data is None:
            return None
        installation = Installation(**json.loads(data))
        if user_id is not None:
            # The user's own installation, with the workspace's latest bot (as slack_sdk does).
            bot = await self.async_find_bot(
                enterprise_id=enterprise_id,
                team_id=team_id,
                is_enterprise_install=is_enterprise_install,
            )
            installation.bot_token = bot.bot_token if bot else None
            installation.bot_id = bot.bot_id if bot else None
            installation.bot_user_id = bot.bot_user_id if bot else None
            installation.bot_scopes = bot.bot_scopes if bot else []
        return installation

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        async with self.db.begin() as conn:
            await conn.execute(
                delete(slack_bots).where(_of(slack_bots, self.client_id, enterprise_id, team_id))
            )
            await self._audit(conn, team_id, None, "slack bot token revoked")

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        where = _of(slack_installations, self.client_id, enterprise_id, team_id)
        if user_id is not None:
            where = and_(where, slack_installations.c.user_id == user_id)
        async with self.db.begin() as conn:
            await conn.execute(delete(slack_installations).where(where))
            await self._audit(conn, team_id, user_id, "slack user token revoked")

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        async with self.db.begin() as conn:
            for table in (slack_bots, slack_installations):
                await conn.execute(
                    delete(table).where(_of(table, self.client_id, enterprise_id, team_id))
                )
            await self._audit(conn, team_id, None, "slack uninstall")


class StoreStates(AsyncOAuthStateStore):
    """slack_sdk's ``AsyncOAuthStateStore`` on the store: each state usable once, until it
    expires (``seconds`` after it was issued, by ``clock``)."""

    def __init__(self, db: Database, clock: Clock, *, seconds: float = STATE_SECONDS) -> None:
        self.db = db
        self.clock = clock
        self.seconds = seconds

    @property
    def logger(self) -> logging.Logger:
        return log

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        state = secrets.token_urlsafe(32)
        now = self.clock.now()
        async with self.db.begin() as conn:
            await conn.execute(delete(oauth_states).where(oauth_states.c.expires_at <= now))
            await conn.execute(
                insert(oauth_states).values(
                    state=state, expires_at=now + timedelta(seconds=self.seconds)
                )
            )
        return state

    async def async_consume(self, state: str) -> bool:
        """Whether ``state`` was issued and has not expired; either way it is used up."""
        if not state or len(state) > 64:
            return False
        async with self.db.begin() as conn:
            result = await conn.execute(
                delete(oauth_states)
                .where(oauth_states.c.state == state, oauth_states.c.expires_at > self.clock.now())
                .returning(oauth_states.c.state)
            )
            consumed = result.first() is not None
            await conn.execute(delete(oauth_states).where(oauth_states.c.state == state))
        return consumed
