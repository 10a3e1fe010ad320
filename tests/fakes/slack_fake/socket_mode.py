"""Socket Mode: single-use connection tickets, hello, envelopes, acks, disconnect."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from tests.fakes.loopback.notify import ChangeNotifier

from .records import SocketDelivery
from .workspace import Workspace


@dataclass
class SocketConnection:
    id: int
    ws: web.WebSocketResponse
    opened_at: float
    draining: bool = False
    """Told to disconnect: Slack sends it no new envelopes."""
    closed: bool = False


class SocketModeServer:
    def __init__(
        self,
        *,
        workspace: Workspace,
        ws_base: Callable[[], str],
        notifier: ChangeNotifier,
        clock: Callable[[], float],
        ack_clock: Callable[[], float],
    ) -> None:
        """``ack_clock`` times an envelope's ack against the 3 s deadline; ``clock`` the rest."""
        self._ws = workspace
        self._clock = clock
        self._ack_clock = ack_clock
        self._ws_base = ws_base
        self._notifier = notifier
        self._tickets: set[str] = set()
        self._by_envelope: dict[str, SocketDelivery] = {}
        self.connections: list[SocketConnection] = []
        self.deliveries: list[SocketDelivery] = []
        self.stray_frames: list[str] = []
        """Frames from the client that were not a valid ack of a known envelope."""
        self.rejected_connects = 0
        self.down = False
        """Socket Mode is down: connections are refused (503) until it is up again."""

    def new_url(self) -> str:
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return f"{self._ws_base()}socket?ticket={ticket}&app_id={self._ws.app_id}"

    @property
    def live(self) -> list[SocketConnection]:
        return [c for c in self.connections if not c.closed]

    def _target(self) -> SocketConnection | None:
        usable = [c for c in self.connections if not c.closed and not c.draining]
        return usable[-1] if usable else None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            self.rejected_connects += 1
            self._notifier.notify()
            return web.Response(status=503, text="socket mode is down")
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            self.rejected_connects += 1
            self._notifier.notify()
            return web.Response(status=401, text="invalid or used ticket")
        self._tickets.discard(ticket)
        ws = web.WebSocketResponse(timeout=2.0)
        await ws.prepare(request)
        conn = SocketConnection(len(self.connections) + 1, ws, self._clock())
        self.connections.append(conn)
        hello = {
            "type": "hello",
            "num_connections": len(self.live),
            "debug_info": {
                "host": f"applink-fake-{conn.id}",
                "build_number": 1,
                "approximate_connection_time": 18060,
            },
            "connection_info": {"app_id": self._ws.app_id},
        }
        await ws.send_str(json.dumps(hello))
        self._notifier.notify()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._on_frame(str(msg.data))
                elif msg.type == WSMsgType.ERROR:
                    break
        finally:
            conn.closed = True
            self._notifier.notify()
        return ws

    def _on_frame(self, data: str) -> None:
        try:
            frame: Any = json.loads(data)
        except ValueError:
            frame = None
        delivery = None
        if isinstance(frame, dict) and isinstance(frame.get("envelope_id"), str):
            delivery = self._by_envelope.get(frame["envelope_id"])
        payload = frame.get("payload") if isinstance(frame, dict) else None
        if delivery is None or (payload is not None and not isinstance(payload, dict)):
            self.stray_frames.append(data)
        else:
            delivery.record_ack(payload, self._ack_clock())
        self._notifier.notify()

    async def deliver(
        self,
        *,
        envelope_type: str,
        payload: dict[str, Any],
        accepts_response_payload: bool,
        extra: dict[str, Any],
        response_url: str | None,
        ack_wait: float,
        connect_wait: float,
    ) -> SocketDelivery:
        await self._notifier.wait_for(lambda: self._target() is not None, connect_wait)
        conn = self._target()
        assert conn is not None
        envelope: dict[str, Any] = {
            "envelope_id": str(uuid.uuid4()),
            "payload": payload,
            "type": envelope_type,
            "accepts_response_payload": accepts_response_payload,
            **extra,
        }
        delivery = SocketDelivery(
            envelope_id=envelope["envelope_id"],
            type=envelope_type,
            envelope=envelope,
            connection_id=conn.id,
            sent_at=self._ack_clock(),
            response_url=response_url,
        )
        self._by_envelope[delivery.envelope_id] = delivery
        self.deliveries.append(delivery)
        await conn.ws.send_str(json.dumps(envelope))
        self._notifier.notify()
        if ack_wait > 0:
            with contextlib.suppress(TimeoutError):
                await delivery.wait_ack(ack_wait)
        return delivery

    async def request_disconnect(self, reason: str) -> None:
        for conn in self.live:
            if conn.draining:
                continue
            conn.draining = True
            message = {
                "type": "disconnect",
                "reason": reason,
                "debug_info": {"host": f"applink-fake-{conn.id}"},
            }
            await conn.ws.send_str(json.dumps(message))
        self._notifier.notify()

    async def close_all(self) -> None:
        for conn in self.live:
            with contextlib.suppress(Exception):
                await conn.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")
