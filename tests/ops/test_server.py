"""The ops server's own routes: health, readiness (and its recovery), metrics, the route hook,
and the ``[server]`` configuration."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from bot.delivery.adapter import Health
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import ConfigError, StoreError
from bot.ingest.poller import PollResult
from bot.ops.metrics import Metrics
from bot.runtime.app import App
from bot.settings.loader import ServerConfig, load, parse
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.ops.conftest import MANUAL, POLLED, AdapterMaker, Bot, Feed, no_sleep, ops_config

ROOT = Path(__file__).resolve().parents[2]


async def test_healthz_says_alive_and_which_instance(bot: Bot) -> None:
    instance = {"id": bot.app.instance.id, "counts": 0, "shards": []}
    assert await bot.get("/healthz") == (200, {"status": "alive", "instance": instance})


async def test_unknown_paths_and_methods_answer_json(bot: Bot) -> None:
    assert await bot.get("/nope") == (404, {"error": "Not Found"})
    async with bot.http.post(bot.url + "/healthz") as resp:
        assert resp.status == 405
        assert resp.headers["Allow"] == "GET,HEAD"
        assert await resp.json() == {"error": "Method Not Allowed"}


async def test_readyz_turns_not_ready_on_failures_and_back_on_recovery(bot: Bot) -> None:
    poller = bot.app.pollers[POLLED]
    assert await poller.poll() is PollResult.ACCEPTED
    status, body = await bot.get("/readyz")
    assert status == 200
    assert body == {
        "status": "ready",
        "problems": [],
        "checks": {
            "store": {"ok": True},
            "adapter:console": {"ok": True},
            "delivery:console": {"ok": True},
            "source:bessemer-2021": {"ok": True},
        },
    }  # the manual count has no source to go stale
    bot.feed.status = 503
    assert await poller.poll() is PollResult.FAILED
    assert (await bot.get("/readyz"))[0] == 200  # one failure is not yet stale (2 are)
    assert await poller.poll() is PollResult.FAILED
    status, body = await bot.get("/readyz")
    assert status == 503
    assert body["status"] == "not ready"
    (problem,) = body["problems"]
    assert problem.startswith(
        "source:bessemer-2021: source nlrb-feed is stale: 2 failed polls in a row; "
        "last error: GET http://127.0.0.1:"
    )
    assert "HTTP 503" in problem
    assert body["checks"]["store"] == {"ok": True}
    bot.feed.status = 200
    assert await poller.poll() is PollResult.NOT_MODIFIED  # a good answer ends the stale spell
    assert (await bot.get("/readyz"))[0] == 200


async def test_readyz_turns_not_ready_when_a_source_is_silent_too_long(bot: Bot) -> None:
    poller = bot.app.pollers[POLLED]
    await poller.poll()
    bot.clock.advance(9 * 60)
    assert (await bot.get("/readyz"))[0] == 200
    bot.clock.advance(61)  # stale_after_minutes = 10, and no poll since
    status, body = await bot.get("/readyz")
    assert status == 503
    assert body["problems"] == [
        "source:bessemer-2021: source nlrb-feed is stale: no good fetch for 601 s"
    ]
    await poller.poll()
    assert (await bot.get("/readyz"))[0] == 200


async def test_only_counting_counts_need_a_fresh_source(bot: Bot) -> None:
    bot.clock.advance(3600)
    assert (await bot.get("/readyz"))[0] == 503
    paused = {"votes": {"yes": 463, "no": 1100}, "challenged": 505, "state": "paused"}
    assert (await bot.push(POLLED, paused))[0] == 201
    status, body = await bot.get("/readyz")
    assert status == 200
    assert "source:bessemer-2021" not in body["checks"]


async def test_readyz_names_a_disconnected_adapter(bot: Bot) -> None:
    """The adapter's own ``health()`` is asked, with its reason (the real adapters' health is
    tested against their fakes: tests/adapters/test_health.py)."""
    assert isinstance(bot.adapter, RecordingAdapter)
    bot.adapter.reported = Health.down("the gateway is reconnecting")
    status, body = await bot.get("/readyz")
    assert status == 503
    assert body["problems"] == ["adapter:console: the gateway is reconnecting"]
    bot.adapter.reported = Health()
    assert (await bot.get("/readyz"))[0] == 200


async def test_readyz_names_a_store_that_fails(bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise StoreError("reading the store failed: disk I/O error")

    status, text = await bot.get("/metrics")
    assert value(text, "tallybot_store_up") == 1
    monkeypatch.setattr(bot.app.db, "connect", broken)
    status, body = await bot.get("/readyz")
    assert status == 503
    assert body["problems"] == ["store: reading the store failed: disk I/O error"]
    status, text = await bot.get("/metrics")  # the counters are still there
    assert status == 200
    assert value(text, "tallybot_store_up") == 0
    assert value(text, "tallybot_outbox_depth", platform="console") == 0  # the last value


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = dict(s.labels)
            assert labels.pop("tallybot_instance", None) is not None, s  # on every sample
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, tuple(sorted(labels.items()))))


async def test_metrics_count_polls_pushes_and_deliveries(bot: Bot) -> None:
    poller = bot.app.pollers[POLLED]
    assert await poller.poll() is PollResult.ACCEPTED
    await bot.app.idle()  # posted at once: latency 0
    assert await poller.poll() is PollResult.NOT_MODIFIED
    bot.feed.status = 503
    assert await poller.poll() is PollResult.FAILED  # 3 attempts, each a fetch error
    bot.feed.status = 200
    bot.feed.doc.update(yes=463, no=1100)
    bot.adapter.transient_failures = 1
    assert await poller.poll() is PollResult.ACCEPTED
    await bot.app.idle()  # fails once: waits for its retry (a backoff of at most 2 s)
    lower = {"votes": {"yes": 463, "no": 1000}, "challenged": 505}
    assert (await bot.push(POLLED, lower))[0] == 409
    await bot.app.idle()  # the admins' notice goes at once: latency 0
    assert (await bot.push(MANUAL, {"votes": {"ana": 1, "ben": 0, "cho": 0}}))[0] == 201
    assert (await bot.push(MANUAL, b"{", secret="forged"))[0] == 401
    await bot.app.idle()  # held back behind the retry in the same channel
    bot.clock.advance(30)
    await bot.app.idle()  # both go: latency 30
    bot.clock.advance(12)

    status, text = await bot.get("/metrics")
    assert status == 200
    assert value(text, "tallybot_polls_total", count=POLLED, result="accepted") == 2
    assert value(text, "tallybot_polls_total", count=POLLED, result="not_modified") == 1
    assert value(text, "tallybot_polls_total", count=POLLED, result="failed") == 1
    assert value(text, "tallybot_fetch_errors_total", count=POLLED, kind="transient") == 3
    assert value(text, "tallybot_tallies_accepted_total", count=POLLED) == 2
    assert value(text, "tallybot_tallies_accepted_total", count=MANUAL) == 1
    assert value(text, "tallybot_tallies_rejected_total", count=POLLED, reason="decrease") == 1
    assert value(text, "tallybot_push_requests_total", status="409") == 1
    assert value(text, "tallybot_push_requests_total", status="201") == 1
    assert value(text, "tallybot_push_requests_total", status="401") == 1
    # 3 updates to the one channel, 1 notice (the rejection) to the admins; one retry.
    assert value(text, "tallybot_messages_sent_total", platform="console", action="post") == 3
    assert value(text, "tallybot_messages_sent_total", platform="console", action="alert") == 1
    assert value(text, "tallybot_messages_retried_total", platform="console") == 1
    assert value(text, "tallybot_messages_failed_total", platform="console") is None
    assert value(text, "tallybot_outbox_depth", platform="console") == 0
    count = value(text, "tallybot_delivery_latency_seconds_count", platform="console")
    assert count == 4
    fast = value(text, "tallybot_delivery_latency_seconds_bucket", platform="console", le="10.0")
    assert fast == 2
    assert value(text, "tallybot_delivery_latency_seconds_sum", platform="console") == 60
    assert value(text, "tallybot_count_seconds_since_change", count=MANUAL) == 42
    assert value(text, "tallybot_count_seconds_since_change", count=POLLED) == 42
    assert value(text, "tallybot_source_stale", count=POLLED) == 0
    assert value(text, "tallybot_source_stale", count=MANUAL) is None


async def test_metrics_show_dead_messages_and_queue_depth(bot: Bot) -> None:
    bot.adapter.gone_channels.add(ChannelRef(Platform("console"), "local", "news"))
    await bot.app.pollers[POLLED].poll()
    await bot.app.idle()
    status, text = await bot.get("/metrics")
    assert status == 200
    assert value(text, "tallybot_messages_failed_total", platform="console") == 1
    assert value(text, "tallybot_count_seconds_since_change", count=MANUAL) is None  # no tally


def test_each_metrics_has_its_own_registry() -> None:
    a, b = Metrics(), Metrics()
    a.polled(POLLED, "accepted")
    assert b"tallybot_polls_total" in a.render()
    assert b'tallybot_polls_total{count="bessemer-2021"' not in b.render()


async def test_push_is_off_without_a_secret(
    feed: tuple[Feed, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TALLYBOT_PUSH_SECRET", raising=False)
    monkeypatch.delenv("TALLYBOT_PUSH_SECRET_FILE", raising=False)
    app = App(ops_config(feed[1], tmp_path), {}, clock=FakeClock(), sleep=no_sleep, poll=False)
    async with app, aiohttp.ClientSession() as http:
        assert app.server is not None
        async with http.post(f"{app.server.url}/api/counts/{POLLED}/tally", data=b"{}") as resp:
            assert resp.status == 503
            assert await resp.json() == {
                "error": "push ingest is off: set TALLYBOT_PUSH_SECRET to turn it on"
            }


class WithRoutes(RecordingAdapter):
    """An adapter with an HTTP endpoint of its own, as Slack's HTTP mode has."""

    def http_routes(self) -> list[web.RouteDef]:
        async def events(request: web.Request) -> web.Response:
            return web.json_response({"challenge": (await request.json())["challenge"]})

        return [web.post("/slack/events", events)]


@pytest.mark.parametrize("make_adapter", [WithRoutes])
async def test_adapters_mount_their_routes_on_the_same_server(
    bot: Bot, make_adapter: AdapterMaker
) -> None:
    async with bot.http.post(bot.url + "/slack/events", json={"challenge": "c4"}) as resp:
        assert resp.status == 200
        assert await resp.json() == {"challenge": "c4"}
    assert bot.app.server is not None
    with pytest.raises(RuntimeError, match="add routes before it starts"):
        bot.app.server.add_routes([web.get("/late", lambda r: web.Response())])


async def test_a_port_in_use_is_a_config_error(bot: Bot, tmp_path: Path) -> None:
    assert bot.app.server is not None
    taken = bot.app.server.port
    cfg = ops_config(bot.feed_url, tmp_path / "other", server={"port": taken})
    with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{taken}"):
        async with App(cfg, {}, clock=FakeClock(), sleep=no_sleep, poll=False):
            pass


def test_server_config_defaults_and_checks(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    assert parse({"server": {}}, path).server == ServerConfig()
    assert parse({}, path).server is None
    cfg = parse({"server": {"host": "0.0.0.0", "port": 9100, "max_body_bytes": 4096}}, path)
    assert cfg.server == ServerConfig(
        host="0.0.0.0", port=9100, push_secret_env="TALLYBOT_PUSH_SECRET", max_body_bytes=4096
    )
    bad: list[tuple[dict[str, Any], str]] = [
        ({"port": 70000}, "server.port: must be 0 to 65535"),
        ({"port": "80"}, "server.port: expected an integer"),
        ({"max_body_bytes": 0}, "server.max_body_bytes: must be a whole number of at least 1"),
        ({"push_secret_env": "MY-SECRET"}, "server.push_secret_env: 'MY-SECRET' is not"),
        ({"host": " "}, "server.host: is empty"),
        ({"prot": 1}, "server.prot: unknown key (did you mean 'port'?)"),
    ]
    for table, problem in bad:
        with pytest.raises(ConfigError, match=re.escape(f"{path}: {problem}")):
            parse({"server": table}, path)


def test_example_config_documents_the_server() -> None:
    cfg = load(ROOT / "config" / "example.toml")
    assert cfg.server == ServerConfig(host="127.0.0.1", port=8080)
    text = (ROOT / "config" / "example.toml").read_text()
    for key in ("host", "port", "push_secret_env", "max_body_bytes", "TALLYBOT_PUSH_SECRET"):
        assert key in text
