"""Telegram's getChatMember answers are remembered for ``admin_cache_seconds`` on the injected
clock, and only so many of them (the real aiogram Bot against the fake Bot API)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram

if TYPE_CHECKING:
    from aiogram import Bot


async def test_an_answer_is_trusted_for_the_ttl_and_asked_again_after_it(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from adapters.telegram.commands import AdminCheck

    alice = fake.add_user("Alice")
    hall = fake.add_group("Union hall")
    fake.add_member(hall, alice, "administrator")
    check = AdminCheck(bot, ttl=60.0, monotonic=clock.monotonic)
    assert await check.is_admin(hall.id, alice.id)
    fake.add_member(hall, alice, "member")  # demoted: not seen while the answer is trusted
    clock.advance(59.9)
    assert await check.is_admin(hall.id, alice.id)
    assert len(fake.calls_to("getChatMember")) == 1
    clock.advance(0.1)  # 60 s after the answer: asked again
    assert not await check.is_admin(hall.id, alice.id)
    assert len(fake.calls_to("getChatMember")) == 2


async def test_only_the_latest_answers_are_kept(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from adapters.telegram.commands import AdminCheck

    hall = fake.add_group("Union hall")
    users = [fake.add_user(f"Member {n}") for n in range(10)]
    for user in users:
        fake.add_member(hall, user, "administrator")
    check = AdminCheck(bot, ttl=3600.0, monotonic=clock.monotonic, kept=4)
    for user in users:
        assert await check.is_admin(hall.id, user.id)
    assert await check.is_admin(hall.id, users[5].id)  # the 5th latest: forgotten, asked again
    assert len(fake.calls_to("getChatMember")) == 11
    for user in users[-3:]:  # still remembered (users[6] went for users[5])
        assert await check.is_admin(hall.id, user.id)
    assert len(fake.calls_to("getChatMember")) == 11
