"""Many workspaces: the Slack app installed through OAuth v2 by two workspaces, each served with
its own bot token. The whole bot (``bot.runtime.app.App``, the ops server on port 0, the real
slack_bolt and slack_sdk) against FakeSlack, installed by an aiohttp client that follows the real
redirects: /slack/install -> the fake's authorize page -> /slack/oauth_redirect?code=..&state=..
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy import func, select

from adapters.slack.adapter import SlackAdapter
from adapters.slack.settings import SCOPES
from adapters.slack.tables import oauth_states, slack_bots, slack_installations
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import ConfigError
from bot.runtime import logs
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import Config, parse
from bot.store.audit import recent
from tests.adapters.test_slack import TITLE, VirtualTime, bot_posts
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import tally

SLACK = Platform("slack")
CLIENT_SECRET = "fake-client-secret-0123456789"


def config(
    tmp_path: Path, fake: FakeSlack, *, server: bool = True, alerts: str = "", **slack: Any
) -> Config:
    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            **({"admins": {"alerts": [alerts]}} if alerts else {}),
            **({"server": {"host": "127.0.0.1", "port": 0}} if server else {}),
            "slack": {
                "api_base": fake.api_url,
                "client_id": fake.oauth_app.client_id,
                "authorize_url": f"{fake.base_url}oauth/v2/authorize",
                **slack,
            },
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": TITLE,
                    "rule": "majority",
                    "tie_holder": "no",
                    "received": 3215,
                    "choices": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}],
                    "source": {"kind": "manual"},
                    "public": True,  # the operator's count, which every workspace may follow
                }
            ],
        },
        tmp_path / "tallybot.toml",
    )


@dataclass
class Bot:
    app: App
    adapter: SlackAdapter
    fake: FakeSlack
    vt: VirtualTime
    base: str
    """The ops server's URL."""

    def browser(self) -> aiohttp.ClientSession:
        """An installer's browser: keeps the state cookie bolt sets (Secure, so the ops server
        counts as a secure origin, as it would behind https)."""
        jar = aiohttp.CookieJar(unsafe=True, treat_as_secure_origin=[self.base])
        return aiohttp.ClientSession(cookie_jar=jar, timeout=aiohttp.ClientTimeout(total=10))

    async def install(self, team: str) -> tuple[int, str]:
        """Install the app in ``team``, following every redirect; the last page's status and
        text."""
        async with (
            self.browser() as browser,
            browser.get(f"{self.base}/slack/install", params={"team": team}) as page,
        ):
            return page.status, await page.text()

    async def slash(self, text: str, *, user: str, channel: str) -> dict[str, Any]:
        fake = self.fake
        delivery = await fake.send_slash_command(
            command="/count", text=text, user_id=user, channel_id=channel
        )
        assert delivery.acked
        await fake.wait_for(
            lambda: any(p.url == delivery.response_url for p in fake.response_url_posts)
        )
        return next(p for p in fake.response_url_posts if p.url == delivery.response_url).body

    async def deliver(self, yes: int, no: int) -> None:
        await self.app.pipeline.ingest(tally(yes, no, challenged=0, received=3215))
        await self.app.idle()

    async def rows(self, table: Any) -> int:
        async with self.app.db.connect() as conn:
            return int(await conn.scalar(select(func.count()).select_from(table)) or 0)


@asynccontextmanager
async def running(
    fake: FakeSlack,
    cfg: Config,
    vt: VirtualTime,
    env: pytest.MonkeyPatch,
    *,
    bot_token: bool = False,
) -> AsyncIterator[Bot]:
    """The whole bot as ``tallybot run`` builds it: secrets from the environment, the single
    bot token only if asked."""
    if bot_token:
        env.setenv("SLACK_BOT_TOKEN", fake.bot_token)
    else:
        env.delenv("SLACK_BOT_TOKEN", raising=False)
    env.setenv("SLACK_APP_TOKEN", fake.app_token)
    env.setenv("SLACK_SIGNING_SECRET", fake.signing_secret)
    env.setenv("SLACK_CLIENT_SECRET", CLIENT_SECRET)
    app = App(cfg, dict(adapter_factories(cfg)), clock=vt.clock, sleep=vt.sleep, poll=False)
    async with app:
        adapter = app.adapters[SLACK]
        assert isinstance(adapter, SlackAdapter)
        # The ops server, or without one the adapter's own port ([slack] host and port).
        port = app.server.port if app.server is not None else adapter.http_port
        base = f"http://127.0.0.1:{port}"
        fake.oauth_app.redirect_urls.append(f"{base}/slack/oauth_redirect")
        if cfg.settings("slack").mode == "socket":
            await fake.wait_for(lambda: len(fake.live_socket_connections) == 1)
        yield Bot(app, adapter, fake, vt, base)


async def until(check: Callable[[], Awaitable[bool]], tries: int = 5000) -> None:
    """Until ``check()`` holds (it reads the store, whose answers take their own time)."""
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


@pytest.fixture
def vt() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
async def fake(vt: VirtualTime) -> AsyncIterator[FakeSlack]:
    async with FakeSlack(clock=vt.monotonic) as f:
        f.oauth_app.client_secret = CLIENT_SECRET
        yield f


async def test_two_workspaces_install_and_each_gets_its_deliveries_with_its_own_token(
    tmp_path: Path,
    fake: FakeSlack,
    vt: VirtualTime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    news_a = fake.add_channel("news-alpha", team_id=alpha)
    news_b = fake.add_channel("news-beta", team_id=beta)
    ada, bo = fake.add_user("ada", team_id=alpha), fake.add_user("bo", team_id=beta)
    lines = io.StringIO()
    with logs.configured(stream=lines, level=logging.DEBUG):  # DEBUG on, as `run` can
        async with running(fake, config(tmp_path, fake), vt, monkeypatch) as bot:
            for team in (alpha, beta):
                status, page = await bot.install(team)
                assert status == 200, page
                assert "Thank you!" in page
            tokens = {team: token for token, team in fake.installed_tokens.items()}
            assert set(tokens) == {alpha, beta}
            assert tokens[alpha] != tokens[beta]
            (exchange_a, exchange_b) = fake.calls_to("oauth.v2.access")
            assert exchange_a.ok
            assert exchange_b.ok
            authorize = [c for c in fake.calls_to("auth.test") if c.token in tokens.values()]
            assert len(authorize) == 2  # bolt asks who each new token is

            for user, channel in ((ada, news_a), (bo, news_b)):
                answer = await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
                assert answer["text"].startswith("Subscribed this channel to bessemer-2021")
            await bot.deliver(463, 1100)

            assert len(bot_posts(fake, news_a)) == 1
            assert len(bot_posts(fake, news_b)) == 1
            posts = {c.args["channel"]: c.token for c in fake.calls_to("chat.postMessage") if c.ok}
            assert posts == {news_a: tokens[alpha], news_b: tokens[beta]}
            # The scopes asked are the ones tallybot uses.
            assert exchange_a.response["scope"] == ",".join(SCOPES)
            assert await bot.rows(slack_bots) == 2
            assert await bot.rows(slack_installations) == 2
    # The tokens are in the store only: in no log line (DEBUG included) and no answer.
    assert "api/chat.postMessage" in lines.getvalue()  # slack_sdk logged its requests
    for token in tokens.values():
        assert token not in lines.getvalue()
        assert not any(token in str(p.body) for p in fake.response_url_posts)


async def test_scoreboards_pins_and_threads_use_the_workspaces_own_token(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    news_a = fake.add_channel("news-alpha", team_id=alpha)
    news_b = fake.add_channel("news-beta", team_id=beta)
    ada, bo = fake.add_user("ada", team_id=alpha), fake.add_user("bo", team_id=beta)
    async with running(fake, config(tmp_path, fake), vt, monkeypatch) as bot:
        for team in (alpha, beta):
            assert (await bot.install(team))[0] == 200
        tokens = {team: token for token, team in fake.installed_tokens.items()}
        await bot.slash("subscribe bessemer-2021 live pin", user=ada, channel=news_a)
        await bot.slash("subscribe bessemer-2021 all thread", user=bo, channel=news_b)
        await bot.deliver(463, 1100)
        vt.clock.advance(2)
        await bot.deliver(500, 1200)
    calls = [c for c in fake.calls if c.args.get("channel") in (news_a, news_b)]
    by_method = {(c.method, c.args["channel"]) for c in calls if c.ok}
    assert {
        ("pins.add", news_a),
        ("chat.update", news_a),
        ("chat.postMessage", news_b),
    } <= by_method
    assert any(c.args.get("thread_ts") for c in calls if c.method == "chat.postMessage")
    team_of = {news_a: alpha, news_b: beta}
    assert [c.method for c in calls if c.token != tokens[team_of[c.args["channel"]]]] == []


async def test_the_single_token_serves_its_own_workspace_next_to_the_installed_ones(
    tmp_path: Path,
    fake: FakeSlack,
    vt: VirtualTime,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alpha = fake.add_team("alpha")
    home, news_a = fake.add_channel("home"), fake.add_channel("news-alpha", team_id=alpha)
    ann, ada = fake.add_user("ann"), fake.add_user("ada", team_id=alpha)
    async with running(fake, config(tmp_path, fake), vt, monkeypatch, bot_token=True) as bot:
        assert (await bot.install(alpha))[0] == 200
        (token_a,) = fake.installed_tokens
        for user, channel in ((ann, home), (ada, news_a)):
            answer = await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
            assert answer["text"].startswith("Subscribed this channel to bessemer-2021")
        await bot.deliver(463, 1100)
        posts = {c.args["channel"]: c.token for c in fake.calls_to("chat.postMessage") if c.ok}
        assert posts == {home: fake.bot_token, news_a: token_a}
    # bolt is given no token of its own to ignore (it warns when it is).
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_commands_in_each_workspace_use_its_own_token(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    news_a = fake.add_channel("news-alpha", team_id=alpha)
    news_b = fake.add_channel("news-beta", team_id=beta)
    bo = fake.add_user("bo", team_id=beta, is_admin=True)
    ada = fake.add_user("ada", team_id=alpha)
    async with running(fake, config(tmp_path, fake), vt, monkeypatch) as bot:
        for team in (alpha, beta):
            assert (await bot.install(team))[0] == 200
        tokens = {team: token for token, team in fake.installed_tokens.items()}
        await bot.deliver(463, 1100)
        # A mention in alpha is answered in its thread with alpha's token, and a chart with it.
        mention = {"type": "app_mention", "user": ada, "channel": news_a}
        said = f"<@{fake.bot_user_id}> status bessemer-2021"
        await fake.send_event({**mention, "text": said}, team_id=alpha)
        await fake.wait_for(lambda: len(fake.messages(news_a)) == 1)
        vt.clock.advance(6)  # a channel gets one public reply in 5 s
        said = f"<@{fake.bot_user_id}> chart bessemer-2021"
        await fake.send_event({**mention, "text": said}, team_id=alpha)
        await fake.wait_for(lambda: len(fake.uploads) == 1)
        # An admin command in beta asks users.info with beta's token.
        answer = await bot.slash("pause bessemer-2021", user=bo, channel=news_b)
    assert answer["text"].startswith("Error")  # beta is not in [slack] admin_workspaces
    replies = fake.calls_to("chat.postMessage") + fake.calls_to("files.completeUploadExternal")
    assert [c.token for c in replies if c.ok] == [tokens[alpha]] * 2
    (asked,) = fake.calls_to("users.info")
    assert (asked.token, asked.args["user"], asked.ok) == (tokens[beta], bo, True)


async def test_a_workspace_is_served_as_soon_as_it_installs(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = fake.add_team("alpha")
    news_a, ada = fake.add_channel("news-alpha", team_id=alpha), fake.add_user("ada", team_id=alpha)
    async with running(fake, config(tmp_path, fake), vt, monkeypatch) as bot:
        before = await bot.slash("list", user=ada, channel=news_a)
        assert before["text"] == (
            "tallybot is not installed in this workspace (or was removed): install it at "
            "/slack/install"
        )
        assert (await bot.install(alpha))[0] == 200
        after = await bot.slash("subscribe bessemer-2021", user=ada, channel=news_a)
        assert after["text"].startswith("Subscribed this channel to bessemer-2021")


async def test_in_http_mode_the_events_and_the_install_pages_share_the_ops_server(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = fake.add_team("alpha")
    news_a, ada = fake.add_channel("news-alpha", team_id=alpha), fake.add_user("ada", team_id=alpha)
    async with running(fake, config(tmp_path, fake, mode="http"), vt, monkeypatch) as bot:
        assert (await bot.install(alpha))[0] == 200
        asked = await fake.send_slash_command_http(
            f"{bot.base}/slack/events",
            command="/count",
            text="subscribe bessemer-2021",
            user_id=ada,
            channel_id=news_a,
        )
        assert asked.status == 200
        await fake.wait_for(lambda: len(fake.response_url_posts) == 1)
        await bot.deliver(463, 1100)
    (answer,) = fake.response_url_posts
    assert answer.body["text"].startswith("Subscribed this channel to bessemer-2021")
    (post,) = [c for c in fake.calls_to("chat.postMessage") if c.ok]
    assert (post.args["channel"], post.token) == (news_a, next(iter(fake.installed_tokens)))
    assert fake.socket_connections == []


async def test_without_an_ops_server_the_adapter_serves_the_install_pages_itself(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = fake.add_team("alpha")
    cfg = config(tmp_path, fake, server=False, port=0)
    async with running(fake, cfg, vt, monkeypatch) as bot:
        assert bot.app.server is None
        assert (await bot.install(alpha))[0] == 200
        assert set(fake.installed_tokens.values()) == {alpha}


async def test_a_workspace_token_acts_only_in_its_own_workspace(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    news_b = fake.add_channel("news-beta", team_id=beta)
    async with running(fake, config(tmp_path, fake), vt, monkeypatch) as bot:
        assert (await bot.install(alpha))[0] == 200
    (token_a,) = fake.installed_tokens
    client = AsyncWebClient(token=token_a, base_url=fake.api_url, retry_handlers=[])
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=news_b, text="hello")
    assert refused.value.response["error"] == "channel_not_found"
    assert bot_posts(fake, news_b) == []
    assert (await client.auth_test())["team_id"] == alpha


async def test_a_forged_a_replayed_or_an_expired_state_is_refused(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = fake.add_team("alpha")
    async with running(fake, config(tmp_path, fake), vt, monkeypatch) as bot:
        redirect = f"{bot.base}/slack/oauth_redirect"
        async with bot.browser() as browser:
            # Through Slack's page by hand, to hold on to the redirect with its code and state.
            async with browser.get(
                f"{bot.base}/slack/install", params={"team": alpha}, allow_redirects=False
            ) as install:
                assert install.status == 302
                authorize = install.headers["Location"]
            assert parse_qs(urlsplit(authorize).query)["scope"] == [",".join(SCOPES)]
            async with browser.get(authorize, allow_redirects=False) as slack:
                back = slack.headers["Location"]
            query = parse_qs(urlsplit(back).query)
            code, state = query["code"][0], query["state"][0]

            # Another browser, which sends the state it is given as its cookie too.
            async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as forger:
                forged = {"code": code, "state": "forged-state-value"}
                cookie = {"Cookie": "slack-app-oauth-state=forged-state-value"}
                async with forger.get(redirect, params=forged, headers=cookie) as page:
                    assert page.status == 401  # bolt: invalid_state
                assert fake.calls_to("oauth.v2.access") == []

            async with browser.get(back) as page:
                assert page.status == 200
            assert len(fake.calls_to("oauth.v2.access")) == 1

            async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as replayer:
                replay = {"Cookie": f"slack-app-oauth-state={state}"}
                async with replayer.get(back, headers=replay) as page:
                    assert page.status == 401  # the state was used up
            assert len(fake.calls_to("oauth.v2.access")) == 1

            # A state older than 10 minutes is refused too.
            async with browser.get(
                f"{bot.base}/slack/install", params={"team": alpha}, allow_redirects=False
            ) as install:
                authorize = install.headers["Location"]
            async with browser.get(authorize, allow_redirects=False) as slack:
                late = slack.headers["Location"]
            vt.clock.advance(601)
            async with browser.get(late) as page:
                assert page.status == 401
            assert len(fake.calls_to("oauth.v2.access")) == 1
            assert await bot.rows(oauth_states) == 0
        assert await bot.rows(slack_installations) == 1


@pytest.mark.parametrize("how", ["app_uninstalled", "tokens_revoked"])
async def test_an_uninstalled_workspace_is_removed_and_its_subscription_disabled(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    news_a = fake.add_channel("news-alpha", team_id=alpha)
    news_b = fake.add_channel("news-beta", team_id=beta)
    ops = fake.add_channel("ops-alpha", team_id=alpha)  # the operator's alerts
    ada, bo = fake.add_user("ada", team_id=alpha), fake.add_user("bo", team_id=beta)
    cfg = config(tmp_path, fake, alerts=f"slack:{alpha}/{ops}")
    async with running(fake, cfg, vt, monkeypatch) as bot:
        for team in (alpha, beta):
            assert (await bot.install(team))[0] == 200
        for user, channel in ((ada, news_a), (bo, news_b)):
            await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
        await bot.deliver(463, 1100)

        before = len(fake.calls)  # the calls made after the removal: fake.calls[before:]
        if how == "app_uninstalled":
            delivery = await fake.uninstall(beta)
        else:
            delivery = await fake.revoke_bot_token(beta)
        assert delivery.acked
        await until(lambda: _no_bot(bot, beta))
        # app_uninstalled removes every trace; tokens_revoked (bot) only the bot.
        assert await bot.rows(slack_installations) == (1 if how == "app_uninstalled" else 2)
        await bot.deliver(500, 1200)

        assert len(bot_posts(fake, news_a)) == 2
        assert len(bot_posts(fake, news_b)) == 1
        async with bot.app.db.connect() as conn:
            from bot.store import subscriptions as sub_rows

            (sub_b,) = await sub_rows.for_channel(conn, ChannelRef(SLACK, beta, news_b))
            (sub_a,) = await sub_rows.for_channel(conn, ChannelRef(SLACK, alpha, news_a))
        assert sub_a.enabled
        assert not sub_b.enabled
        assert sub_b.disabled_reason is not None
        assert f"tallybot is not installed in the Slack workspace {beta}" in sub_b.disabled_reason
        assert "uninstalled" in sub_b.disabled_reason
        async with bot.app.db.connect() as conn:
            audited = [(e.actor, e.action) for e in reversed(await recent(conn))]
        gone = "slack uninstall" if how == "app_uninstalled" else "slack bot token revoked"
        assert audited[:3] == [
            (f"slack:{alpha}/U0INSTALL1", "slack install"),
            (f"slack:{beta}/U0INSTALL1", "slack install"),
            (f"slack:{beta}", gone),
        ]
        # The operator's count: told in the operator's channel, as one alert for the workspace
        # (held a moment for the workspace's other channels).
        vt.clock.advance(11)
        await bot.app.idle()
        told = [m for m in bot_posts(fake, ops) if beta in m.text]
        assert len(told) == 1, told
        shown = told[0].text.replace("\u200b", "")  # Slack's text breaks "slack:" links
        assert f"stopped posting in 1 channel of slack:{beta}: tallybot is not installed" in shown
        assert "Install the app in the workspace again at " in told[0].text
        # No call went out with the revoked token.
        revoked = {t for t, team in fake.installed_tokens.items() if team == beta}
        assert [c for c in fake.calls[before:] if c.token in revoked] == []


async def test_the_single_token_never_serves_a_workspace_that_removed_the_app(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28, part 2: with ``SLACK_BOT_TOKEN`` set next to OAuth, a workspace that
    uninstalled the app (or revoked its tokens) is not served with the single token, which is
    another workspace's: nothing goes to its channels with it, the operator is told the app is
    not installed there (not that a channel was deleted), and its commands are not answered."""
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    home, ops = fake.add_channel("home"), fake.add_channel("ops")  # the single token's own
    news_a = fake.add_channel("news-alpha", team_id=alpha)
    news_b = fake.add_channel("news-beta", team_id=beta)
    ann = fake.add_user("ann")
    ada, bo = fake.add_user("ada", team_id=alpha), fake.add_user("bo", team_id=beta)
    cfg = config(tmp_path, fake, alerts=f"slack:{fake.team_id}/{ops}")
    async with running(fake, cfg, vt, monkeypatch, bot_token=True) as bot:
        for team in (alpha, beta):
            assert (await bot.install(team))[0] == 200
        for user, channel in ((ann, home), (ada, news_a), (bo, news_b)):
            await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
        await bot.deliver(463, 1100)
        before = len(fake.calls)  # the calls made after the removals: fake.calls[before:]
        removed = [await fake.uninstall(alpha), await fake.revoke_bot_token(beta)]
        assert all(d.acked for d in removed)
        await until(lambda: _no_bot(bot, alpha))
        await until(lambda: _no_bot(bot, beta))
        await bot.deliver(500, 1200)
        vt.clock.advance(11)  # the alerts held a moment for their workspace's other channels
        await bot.app.idle()
        asked = await fake.send_slash_command(
            command="/count", text="status bessemer-2021", user_id=ada, channel_id=news_a
        )
        vt.clock.advance(6)
        await bot.app.idle()
    assert len(bot_posts(fake, home)) == 2  # the single token's own workspace: served
    assert len(bot_posts(fake, news_a)) == len(bot_posts(fake, news_b)) == 1
    gone = {news_a, news_b}
    late = [c for c in fake.calls[before:] if c.args.get("channel") in gone]
    assert late == []  # not a call to their channels, with any token
    told = [m.text.replace("\u200b", "") for m in bot_posts(fake, ops)]
    for team in (alpha, beta):
        (about,) = [t for t in told if f"slack:{team}" in t]
        assert f"1 channel of slack:{team}: tallybot is not installed in the workspace" in about
        assert "deleted" not in about
    assert asked.acked
    (answer,) = [p.body["text"] for p in fake.response_url_posts if p.url == asked.response_url]
    assert answer.startswith("tallybot is not installed in this workspace (or was removed)")


async def _no_bot(bot: Bot, team: str) -> bool:
    async with bot.app.db.connect() as conn:
        found = await conn.scalar(
            select(func.count()).select_from(slack_bots).where(slack_bots.c.team_id == team)
        )
    return found == 0


def test_the_client_secret_is_required_and_the_bot_token_is_not(
    tmp_path: Path, fake: FakeSlack
) -> None:
    cfg = config(tmp_path, fake)
    env = {"SLACK_APP_TOKEN": fake.app_token}
    with pytest.raises(ConfigError, match="SLACK_CLIENT_SECRET"):
        adapter_factories(cfg, env=env)
    assert SLACK in adapter_factories(cfg, env={**env, "SLACK_CLIENT_SECRET": CLIENT_SECRET})


def test_the_install_flow_asks_for_the_scopes_of_the_manifest() -> None:
    """The manifest is pasted into Slack by hand; the install flow asks for what it lists."""
    manifest = (Path(__file__).parents[2] / "config" / "slack-manifest.yml").read_text()
    bot_scopes = manifest.split("    bot:\n", 1)[1].split("settings:", 1)[0]
    listed = re.findall(r"^      - ([a-z_:.]+)$", bot_scopes, flags=re.MULTILINE)
    assert listed
    assert tuple(listed) == SCOPES
    assert "- app_uninstalled" in manifest
    assert "- tokens_revoked" in manifest
