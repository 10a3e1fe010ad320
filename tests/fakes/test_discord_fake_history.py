"""FakeDiscord reading messages back as Discord does: the nonce window, no nonce kept, and an
empty answer (not an error) without Read Message History."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.testing.clock import FakeClock
from tests.fakes.discord_fake import FakeDiscord


async def test_reading_back_keeps_no_nonce_and_needs_read_message_history() -> None:
    clock = FakeClock()
    async with FakeDiscord(token="t", clock=clock.monotonic, nonce_window_s=300) as fake:
        guild = fake.add_guild("g")
        channel = fake.add_channel(guild, "results")
        url = f"{fake.base_url}/channels/{channel}/messages"
        body = {"content": "hello", "nonce": "tb1", "enforce_nonce": True}
        async with aiohttp.ClientSession(headers={"Authorization": "Bot t"}) as http:

            async def call(method: str, **kw: Any) -> Any:
                async with http.request(method, url, **kw) as response:
                    assert response.status == 200
                    return await response.json()

            created = await call("POST", json=body)
            again = await call("POST", json=body)  # within the window: the same message
            clock.advance(301)
            late = await call("POST", json=body)  # after it: a second one
            listed = await call("GET", params={"limit": "10"})
            fake.revoke_read_history(channel)
            hidden = await call("GET", params={"limit": "10"})
    assert created["nonce"] == "tb1"
    assert again["id"] == created["id"]
    assert late["id"] != created["id"]
    assert [m["id"] for m in listed] == [late["id"], created["id"]]
    assert all("nonce" not in m for m in listed)
    assert hidden == []
