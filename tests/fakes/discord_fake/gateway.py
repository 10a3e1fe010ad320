"""The gateway websocket: HELLO, heartbeats, IDENTIFY/READY/GUILD_CREATE, RESUME, dispatch."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from tests.fakes.loopback.limits import FixedWindow

from . import payloads
from .models import (
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_PRESENCES,
    INTENT_GUILDS,
    JSON,
    PRIVILEGED_INTENTS,
    Channel,
    Guild,
    User,
)


class FakeDiscord(Protocol):
    """What the gateway reads of the fake's state (``server.FakeDiscord``)."""

    token: str
    clock: Callable[[], float]
    identify_clock: Callable[[], float] | None
    max_concurrency: int
    privileged_intents: int
    app_id: int
    bot_user_id: int
    users: dict[int, User]
    guilds: dict[int, Guild]
    channels: dict[int, Channel]
    internal_errors: list[Exception]

    @property
    def gateway_url(self) -> str: ...

    def notify(self) -> None: ...


HEARTBEAT_INTERVAL_MS = 41250
NEW_SESSION_CODES = (4007, 4009)
"""Closes after which Discord wants a new session: the session is gone, a RESUME gets op 9."""
MAX_HISTORY = 10_000
IDENTIFY_WINDOW_S = 5.0  # per bucket (shard % max_concurrency); beyond: op 9, Invalid Session


@dataclass
class Session:
    session_id: str
    intents: int
    shard: tuple[int, int]
    large_threshold: int
    seq: int = 0
    history: list[tuple[int, str]] = field(default_factory=list)
    conn: Connection | None = None
    presence: JSON | None = None

    def covers(self, guild_id: int | None) -> bool:
        return guild_id is None or (guild_id >> 22) % self.shard[1] == self.shard[0]


class Connection:
    def __init__(self, hub: GatewayHub, ws: web.WebSocketResponse) -> None:
        self.hub = hub
        self.ws = ws
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.session: Session | None = None
        self.closing = False
        self.server_closed = False
        self.window = FixedWindow(120, 60.0)
        self.sender = asyncio.create_task(self._send_loop())

    async def _send_loop(self) -> None:
        while True:
            frame = await self.queue.get()
            try:
                if frame is None:
                    return
                if not self.ws.closed:
                    with contextlib.suppress(ConnectionError, RuntimeError):
                        await self.ws.send_str(frame)
            finally:
                self.queue.task_done()

    def send(self, payload: JSON) -> None:
        self.hub.sent.append(payload)
        if not self.closing:
            self.queue.put_nowait(json.dumps(payload, separators=(",", ":")))

    async def stop_sender(self) -> None:
        if not self.sender.done():
            self.queue.put_nowait(None)
            await self.sender

    async def close(self, code: int, reason: str = "") -> None:
        """Flush what was queued, then close with ``code``."""
        if self.closing:
            return
        await self.stop_sender()
        self.closing = True
        await self.ws.close(code=code, message=reason.encode())


class GatewayHub:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.sessions: dict[str, Session] = {}
        self.connections: set[Connection] = set()
        self.ready_event = asyncio.Event()
        self.identify_count = 0
        self.identify_refused = 0  # IDENTIFYs over max_concurrency per 5 s (op 9)
        self.identified_at: dict[int, float] = {}  # each bucket's last session start
        self.overlaps = 0  # sessions started while another of the same shard was connected
        self.resume_count = 0
        self.sent: list[JSON] = []
        self.received: list[JSON] = []
        self.close_codes: list[int] = []  # codes the fake closed connections with
        self.down = False
        self.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS  # HELLO's; tests shorten it
        self.ack_delay_s = 0.0
        """How long after a heartbeat its ACK is sent: a real gateway's is a network round trip
        away. discord.py records a heartbeat as sent (``_last_send``) on its keep-alive thread
        once the loop has sent it; an ACK that the loop reads before that thread runs again (no
        round trip, a busy machine) is measured from the heartbeat before: "Can't keep up,
        shard ID 0 websocket is 41.3s behind" (one heartbeat interval). Benches on a shared
        machine set a round trip."""
        self.withhold_acks = False
        """A zombie connection: heartbeats are read and never acknowledged (op 11)."""
        self.acks_withheld = 0
        """The gateway is down: connections are refused (503) until it is up again."""
        self.refused = 0

    # --------------------------------------------------------------- serving

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            self.refused += 1
            self.fake.notify()
            return web.Response(status=503, text="the gateway is down")
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        conn = Connection(self, ws)
        self.connections.add(conn)
        hello = {"heartbeat_interval": self.heartbeat_interval_ms}
        conn.send({"op": 10, "d": hello, "s": None, "t": None})
        try:
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    try:
                        await self._on_frame(conn, msg.data)
                    except Exception as exc:  # a bug in the fake: fail the test at exit
                        self.fake.internal_errors.append(exc)
                        await self._close(conn, 4000, "Unknown error.")
                elif msg.type is WSMsgType.BINARY:
                    await self._close(conn, 4002, "Error while decoding payload.")
                if conn.closing:
                    break
        finally:
            await conn.stop_sender()
            conn.closing = True
            if not ws.closed:
                await ws.close()
            self.connections.discard(conn)
            session = conn.session
            if session is not None and session.conn is conn:
                session.conn = None
                if ws.close_code in (1000, 1001) and not conn.server_closed:
                    self.sessions.pop(session.session_id, None)
            self.fake.notify()
        return ws

    async def _close(self, conn: Connection, code: int, reason: str) -> None:
        self.close_codes.append(code)
        conn.server_closed = True
        if code in NEW_SESSION_CODES and conn.session is not None:
            self.sessions.pop(conn.session.session_id, None)
        await conn.close(code, reason)

    async def _on_frame(self, conn: Connection, text: str) -> None:
        try:
            payload: Any = json.loads(text)
            op = payload["op"]
            data = payload.get("d")
        except (ValueError, KeyError, TypeError):
            await self._close(conn, 4002, "Error while decoding payload.")
            return
        self.received.append(payload)
        self.fake.notify()
        if not conn.window.try_acquire(self.fake.clock()):
            await self._close(conn, 4008, "Rate limited.")
        elif op == 1 and self.withhold_acks:
            self.acks_withheld += 1
        elif op == 1 and self.ack_delay_s > 0:
            ack = {"op": 11, "d": None, "s": None, "t": None}
            asyncio.get_running_loop().call_later(self.ack_delay_s, conn.send, ack)
        elif op == 1:
            conn.send({"op": 11, "d": None, "s": None, "t": None})
        elif op == 2:
            await self._identify(conn, data)
        elif op == 6:
            await self._resume(conn, data)
        elif conn.session is None:
            await self._close(conn, 4003, "Not authenticated.")
        elif op == 3:
            conn.session.presence = data
        elif op == 4:
            pass  # voice state update: no voice here
        elif op == 8:
            self._members_chunk(conn.session, data)
        else:
            await self._close(conn, 4001, "Unknown opcode.")

    async def _identify(self, conn: Connection, d: Any) -> None:
        fake = self.fake
        if conn.session is not None:
            await self._close(conn, 4005, "Already authenticated.")
            return
        if not isinstance(d, dict) or d.get("token") != fake.token:
            await self._close(conn, 4004, "Authentication failed.")
            return
        intents = d.get("intents")
        if not isinstance(intents, int) or intents < 0:
            await self._close(conn, 4013, "Invalid intent(s).")
            return
        if intents & PRIVILEGED_INTENTS & ~fake.privileged_intents:
            await self._close(conn, 4014, "Disallowed intent(s).")
            return
        shard = d.get("shard", [0, 1])
        valid_shard = isinstance(shard, list) and len(shard) == 2 and 0 <= shard[0] < shard[1]
        if not valid_shard:
            await self._close(conn, 4010, "Invalid shard.")
            return
        bucket, clock = shard[0] % max(1, fake.max_concurrency), fake.identify_clock
        now = clock() if clock is not None else 0.0
        last = self.identified_at.get(bucket)
        if clock is not None and last is not None and now - last < IDENTIFY_WINDOW_S:
            self.identify_refused += 1
            conn.send({"op": 9, "d": False, "s": None, "t": None})
            fake.notify()
            return
        self.identified_at[bucket] = now
        session = Session(
            uuid.uuid4().hex, intents, (shard[0], shard[1]), d.get("large_threshold", 50)
        )
        live = [s for s in self.sessions.values() if s.conn is not None and not s.conn.closing]
        self.overlaps += any(s.shard == session.shard for s in live)
        self.sessions[session.session_id] = session
        session.conn, conn.session = conn, session
        self.identify_count += 1
        me = fake.bot_user_id  # the guilds the bot is in
        guilds = [g for g in fake.guilds.values() if session.covers(g.id) and me in g.members]
        flags = payloads.application_flags(fake.privileged_intents)
        ready: JSON = {
            "v": 10,
            "user": payloads.me(fake.users[fake.bot_user_id]),
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": fake.gateway_url,
            "application": {"id": str(fake.app_id), "flags": flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
            "_trace": ["fake-discord"],
        }
        if "shard" in d:
            ready["shard"] = [shard[0], shard[1]]
        self._push(session, "READY", ready)
        if intents & INTENT_GUILDS:
            for guild in guilds:
                self._push(session, "GUILD_CREATE", self._guild_create(guild, session))
        self.ready_event.set()

    async def _resume(self, conn: Connection, d: Any) -> None:
        fake = self.fake
        if not isinstance(d, dict) or d.get("token") != fake.token:
            await self._close(conn, 4004, "Authentication failed.")
            return
        session = self.sessions.get(str(d.get("session_id")))
        seq = d.get("seq")
        oldest = session.history[0][0] if session is not None and session.history else 1
        resumable = (
            session is not None
            and conn.session is None
            and isinstance(seq, int)
            and seq <= session.seq
            and seq + 1 >= oldest
        )
        if not resumable or session is None or not isinstance(seq, int):
            conn.send({"op": 9, "d": False, "s": None, "t": None})
            return
        if session.conn is not None:
            session.conn.session = None
        session.conn, conn.session = conn, session
        for s, frame in session.history:
            if s > seq:
                conn.queue.put_nowait(frame)
        self.resume_count += 1
        self._push(session, "RESUMED", {"_trace": ["fake-discord"]})

    def _members_chunk(self, session: Session, d: Any) -> None:
        guild = self.fake.guilds.get(int(d.get("guild_id", 0)))
        if guild is None:
            return
        members = list(guild.members.values())
        user_ids = d.get("user_ids")
        if user_ids:
            wanted = {int(u) for u in (user_ids if isinstance(user_ids, list) else [user_ids])}
            members = [m for m in members if m.user_id in wanted]
        elif not session.intents & INTENT_GUILD_MEMBERS:
            members = []
        else:
            query = str(d.get("query") or "").lower()
            members = [
                m for m in members if self.fake.users[m.user_id].name.lower().startswith(query)
            ]
            limit = int(d.get("limit") or 0)
            if limit:
                members = members[:limit]
        chunk: JSON = {
            "guild_id": str(guild.id),
            "members": [payloads.member(m, self.fake.users[m.user_id]) for m in members],
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [],
        }
        if d.get("nonce") is not None:
            chunk["nonce"] = d["nonce"]
        self._push(session, "GUILD_MEMBERS_CHUNK", chunk)

    def _guild_create(self, guild: Guild, session: Session) -> JSON:
        fake = self.fake
        bot_member = guild.members[fake.bot_user_id]
        members = [bot_member]
        if session.intents & INTENT_GUILD_PRESENCES:
            members = list(guild.members.values())
        return {
            **payloads.guild(guild),
            "joined_at": guild.joined_at,
            "large": len(guild.members) >= session.large_threshold,
            "unavailable": False,
            "member_count": len(guild.members),
            "members": [payloads.member(m, fake.users[m.user_id]) for m in members],
            "channels": [
                payloads.channel(fake.channels[c], with_guild_id=False) for c in guild.channels
            ],
            "voice_states": [],
            "threads": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "embedded_activities": [],
            "lazy": True,
        }

    # -------------------------------------------------------------- dispatch

    def _push(self, session: Session, event: str, data: JSON) -> None:
        session.seq += 1
        payload = {"op": 0, "t": event, "s": session.seq, "d": data}
        frame = json.dumps(payload, separators=(",", ":"))
        session.history.append((session.seq, frame))
        del session.history[:-MAX_HISTORY]
        self.sent.append(payload)
        conn = session.conn
        if conn is not None and not conn.closing:
            conn.queue.put_nowait(frame)
        self.fake.notify()

    def dispatch(self, event: str, data: JSON, guild_id: int | None, intent: int | None) -> int:
        """Send an event to every session for the guild's shard (given the intent); sessions
        that are disconnected keep it for RESUME. Returns how many live connections got it."""
        live = 0
        for session in list(self.sessions.values()):
            if not session.covers(guild_id):
                continue
            if intent is not None and not session.intents & intent:
                continue
            self._push(session, event, data)
            live += session.conn is not None and not session.conn.closing
        return live

    def guild_added(self, guild: Guild) -> None:
        for session in list(self.sessions.values()):
            if session.covers(guild.id) and session.intents & INTENT_GUILDS:
                self._push(session, "GUILD_CREATE", self._guild_create(guild, session))

    def live_sessions(self, guild_id: int | None) -> int:
        """How many connected sessions get the guild's events (one, when sharded right)."""
        return sum(
            s.conn is not None and not s.conn.closing and s.covers(guild_id)
            for s in self.sessions.values()
        )

    async def flush(self) -> None:
        """Wait until every queued frame was written to its socket."""
        await asyncio.gather(*(c.queue.join() for c in list(self.connections)))

    async def drop_all(self, code: int = 4000) -> None:
        for conn in list(self.connections):
            await self._close(conn, code, "Dropped by the fake.")

    async def close_all(self) -> None:
        await self.drop_all(1001)
