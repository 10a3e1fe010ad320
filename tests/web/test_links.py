"""``status`` replies and final messages link a public count's page when ``[web] public_url``
says where the public reaches it; private counts and a bot without it never do."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.commands.request import Request
from bot.domain.message import Message
from bot.domain.render_text import render
from bot.domain.subscription import ChannelRef, Platform
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.web.conftest import PRIVATE, PUBLIC, ingest, make_app, web_config

NEWS = ChannelRef(Platform("console"), "local", "news")
URL = "https://count.example.org"


def notes(message: Message | None) -> list[str]:
    assert message is not None
    return [str(n) for n in message.notes]


@pytest.mark.parametrize("public_url", [URL, URL + "/", None])
async def test_status_links_the_page_of_a_public_count(
    tmp_path: Path, public_url: str | None
) -> None:
    web = {"public_url": public_url} if public_url else {}
    clock = FakeClock()
    async with make_app(web_config(tmp_path, web=web), clock) as app:
        await ingest(app, clock, PUBLIC, yes=463, no=1100)
        await ingest(app, clock, PRIVATE, ana=3, ben=4)
        shown = await app.commands.handle(Request(NEWS, "u", "u", f"status {PUBLIC}"))
        private = await app.commands.handle(Request(NEWS, "u", "u", f"status {PRIVATE}"))
    link = f"Live page: {URL}/c/{PUBLIC}"
    assert notes(shown.message) == ([link] if public_url else [])
    assert "Live page" not in private.text  # a private count's status carries no link
    assert private.message is None or notes(private.message) == []
    if public_url:
        assert shown.message is not None
        assert render(shown.message).splitlines()[-2] == link  # above the footer, as a note


async def test_the_final_message_links_the_page(tmp_path: Path) -> None:
    clock = FakeClock()
    async with make_app(web_config(tmp_path, web={"public_url": URL}), clock) as app:
        for count_id in (PUBLIC, PRIVATE):
            await app.commands.handle(Request(NEWS, "u", "u", f"subscribe {count_id} all"))
        await ingest(
            app, clock, PUBLIC, yes=463, no=1100, received=3117
        )  # a final may not lose ballots
        await ingest(
            app,
            clock,
            PUBLIC,
            yes=738,
            no=1798,
            void=76,
            challenged=505,
            received=3117,
            state="final",
        )
        private = await ingest(app, clock, PRIVATE, ana=3, ben=4, state="final")
        await app.idle()
        adapter = app.adapters[Platform("console")]
        assert isinstance(adapter, RecordingAdapter)
        sent = [m for m in adapter.messages() if isinstance(m, Message)]
    update, final = [m for m in sent if m.count_id == PUBLIC]
    assert notes(update) == []  # only the final carries it
    assert final.final
    assert notes(final) == [f"Live page: {URL}/c/{PUBLIC}"]
    assert private.message is not None
    assert private.message.final
    assert notes(private.message) == []  # a private count's final carries none
