"""The push API follows ownership (issue 15): a place's admins make and revoke API keys in chat
(``apikey``), shown once and kept hashed; a key pushes to, and makes, only its own place's
counts; another place's private count is unknown to it; the operator's secret pushes only the
operator's counts."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from sqlalchemy import select

from bot.commands.request import Reply, Request
from bot.domain.subscription import ChannelRef, Platform
from bot.ops import signing
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store.schema import api_keys
from tests.ops.conftest import POLLED, SECRET, Bot

A = ChannelRef(Platform("discord"), "111111111111111111", "1")
B = ChannelRef(Platform("slack"), "T0B", "C1")
FIGURES = {"votes": {"yes": 10, "no": 4}}
TOKEN = re.compile(r"tbk_[0-9]+_[A-Za-z0-9_-]{43}")


async def say(bot: Bot, where: ChannelRef, text: str, *, admin: bool = True) -> Reply:
    bot.clock.advance(3)  # within the command limits
    request = Request(where, "42" if admin else "7", "ana", text, tenant_admin=admin)
    return await bot.app.commands.handle(request)


async def with_key(
    bot: Bot, path: str, token: str, body: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    async with bot.http.post(bot.url + path, data=json.dumps(body), headers=headers) as resp:
        return resp.status, await resp.json()


async def signed(bot: Bot, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    raw = json.dumps(body).encode()
    headers = signing.headers(SECRET, bot.clock.now().timestamp(), raw, path=path)
    async with bot.http.post(bot.url + path, data=raw, headers=headers) as resp:
        return resp.status, await resp.json()


def token_in(reply: Reply) -> str:
    found = TOKEN.search(reply.text)
    assert found is not None, reply.text
    return found.group(0)


async def test_a_key_pushes_its_own_places_counts_only(bot: Bot) -> None:
    assert (await say(bot, A, "create local-7 Local 7 vote choices=yes:Yes,no:No")).ok
    assert (await say(bot, B, "create b-vote B vote choices=yes:Yes,no:No")).ok
    member = await say(bot, A, "apikey create", admin=False)
    made_a, made_b = await say(bot, A, "apikey create"), await say(bot, B, "apikey create")
    key_a, key_b = token_in(made_a), token_in(made_b)
    tally = "/api/counts/{}/tally"

    own = await with_key(bot, tally.format("local-7"), key_a, FIGURES)
    foreign = await with_key(bot, tally.format("local-7"), key_b, FIGURES)
    nothing = await with_key(bot, tally.format("no-such"), key_b, FIGURES)
    operators = await with_key(bot, tally.format(POLLED), key_a, FIGURES)
    by_secret = await signed(bot, tally.format("local-7"), FIGURES)
    assert (await say(bot, A, "edit local-7 public=yes")).ok
    public = await with_key(bot, tally.format("local-7"), key_b, FIGURES)
    listed = await say(bot, A, "apikey list")
    revoked = await say(bot, A, f"apikey revoke {key_a.split('_')[1]}")
    from_b = await say(bot, B, f"apikey revoke {key_a.split('_')[1]}")
    after = await with_key(bot, tally.format("local-7"), key_a, FIGURES)
    forged = await with_key(bot, tally.format("b-vote"), key_b[:-4] + "AAAA", FIGURES)
    async with bot.app.db.connect() as conn:
        digests = (await conn.scalars(select(api_keys.c.digest).order_by(api_keys.c.id))).all()
        audit = [(a.actor, a.action, a.new or "") for a in await audit_rows.recent(conn)]

    assert member.text.startswith("Error: only admins")
    assert made_a.text.startswith("API key #1 for the counts of this workspace (shown only now")
    assert own[0] == 201
    assert own[1]["result"] == "accepted"
    assert foreign == (404, {"error": "unknown count 'local-7'; this key's counts are b-vote"})
    assert nothing == (404, {"error": "unknown count 'no-such'; this key's counts are b-vote"})
    assert operators[0] == 404
    assert by_secret[0] == 403
    assert "push to it with one of its API keys" in by_secret[1]["error"]
    assert public[0] == 403  # public: seen, but pushed only by its owner
    assert listed.text.startswith("API keys of this workspace:\n#1, made by discord:42 (ana)")
    assert revoked.text == "Revoked API key #1: it is refused from now on."
    assert from_b.text == "Error: this workspace has no live key #1"
    assert after == (401, {"error": "unknown or revoked API key"})
    assert forged == (401, {"error": "unknown or revoked API key"})
    # Kept as the SHA-256 of the secret part only; the token is nowhere in the store.
    secrets = [key_a.split("_", 2)[2], key_b.split("_", 2)[2]]
    assert list(digests) == [hashlib.sha256(s.encode()).hexdigest() for s in secrets]
    assert not any(key_a in " ".join(entry) or key_b in " ".join(entry) for entry in audit)
    assert ("push (key #1 of discord:111111111111111111)", "push", "") in [
        (actor, action, "") for actor, action, _ in audit
    ]


async def test_post_api_counts_makes_a_count_for_whoever_asks(bot: Bot) -> None:
    key = token_in(await say(bot, B, "apikey create"))
    body: dict[str, Any] = {
        "id": "local-9",
        "title": "Local 9 contract vote",
        "choices": [{"id": "yes", "label": "Ratify"}, {"id": "no", "label": "Reject"}],
        "rule": "threshold",
        "threshold": "2/3",
        "tie_holder": "no",
        "received": 120,
    }
    made = await with_key(bot, "/api/counts", key, body)
    again = await with_key(bot, "/api/counts", key, body)
    bad = await with_key(bot, "/api/counts", key, {**body, "id": "local-10", "choices": []})
    extra = await with_key(bot, "/api/counts", key, {**body, "id": "local-11", "colour": "red"})
    by_operator = await signed(bot, "/api/counts", {**body, "id": "op-count"})
    pushed = await with_key(bot, "/api/counts/local-9/tally", key, FIGURES)
    seen_in_a = await say(bot, A, "status local-9")
    async with bot.app.db.connect() as conn:
        count = await count_rows.get(conn, "local-9")
        operator = await count_rows.get(conn, "op-count")
    assert made == (201, {"result": "created", "count": "local-9"})
    assert again == (409, {"error": count_rows.taken("local-9")})
    assert bad[0] == 422
    assert "two choices" in bad[1]["error"]
    assert extra[0] == 422
    assert by_operator == (201, {"result": "created", "count": "op-count"})
    assert pushed[0] == 201
    assert seen_in_a.text == "Error: unknown count 'local-9'"
    assert count is not None
    assert (count.owner, count.public, count.received) == ("slack:T0B", False, 120)
    assert operator is not None
    assert operator.owner == "operator"


async def test_unauthenticated_endpoints_name_no_places_count(bot: Bot) -> None:
    """/metrics and /healthz answer anyone: a place's private count is counted, not named."""
    assert (await say(bot, A, "create local-7 Local 7 vote choices=yes:Yes,no:No")).ok
    key = token_in(await say(bot, A, "apikey create"))
    tally = "/api/counts/local-7/tally"
    assert (await with_key(bot, tally, key, FIGURES))[0] == 201
    assert (await with_key(bot, tally, key, {"votes": {"yes": 9, "no": 4}}))[0] == 409
    assert (await signed(bot, f"/api/counts/{POLLED}/tally", FIGURES))[0] == 201
    await bot.app.pollers[POLLED].poll()
    async with bot.http.get(bot.url + "/metrics") as resp:
        metrics = await resp.text()
    async with bot.http.get(bot.url + "/healthz") as resp:
        health = await resp.text()
    assert "local-7" not in metrics
    assert 'tallybot_tallies_accepted_total{count="tenant"' in metrics
    assert 'tallybot_tallies_rejected_total{count="tenant",reason="decrease"' in metrics
    assert f'tallybot_tallies_accepted_total{{count="{POLLED}"' in metrics  # the operator's
    assert "local-7" not in health
    assert POLLED not in health


async def test_a_taken_name_is_refused_in_the_same_words_whoever_owns_it(bot: Bot) -> None:
    """One namespace: place B learns that a name is in use, and nothing about whose it is or
    whether it could see it (docs/explanation/authority.md)."""
    assert (await say(bot, A, "create a-secret A secret choices=yes:Yes,no:No")).ok
    assert (await say(bot, B, "create b-own B own choices=yes:Yes,no:No")).ok
    key = token_in(await say(bot, B, "apikey create"))
    body: dict[str, Any] = {"title": "x", "choices": [{"id": "yes"}, {"id": "no"}]}
    in_chat, by_key = [], []
    for name in ("a-secret", "b-own", POLLED):  # A's private count, B's own, the operator's
        reply = await say(bot, B, f"create {name} Mine choices=yes:Yes,no:No")
        in_chat.append(reply.text.replace(name, "NAME"))
        status, answer = await with_key(bot, "/api/counts", key, {**body, "id": name})
        by_key.append((status, answer["error"].replace(name, "NAME")))
    words = "the name NAME is taken (names are shared by every place); pick another"
    assert in_chat == [f"Error: {words}"] * 3
    assert by_key == [(409, words)] * 3
