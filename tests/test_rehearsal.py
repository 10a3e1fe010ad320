"""The rehearsal's own rules (``bot.delivery.rehearsal``), on the recording adapter: a 429 is
waited out and tried again, a channel that is gone is reported with its reason, the reply lists
at most ``SHOWN_FAILURES`` failed channels, and a rehearsal without running adapters is refused."""

from __future__ import annotations

import pytest

from bot.delivery.pacing import Pace, unpaced
from bot.delivery.rehearsal import KEEP_S, SHOWN_FAILURES, Failed, Outcome, Rehearsals
from bot.domain.message import Attachment, Outgoing
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import CommandError, RateLimited
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock

pytestmark = pytest.mark.timeout(10)

DISCORD = Platform("discord")


def channel(n: int) -> ChannelRef:
    return ChannelRef(DISCORD, "g1", str(n))


class LimitedOnce(RecordingAdapter):
    """The platform answers the first post with a 429 (retry after 2 s)."""

    limited = 1

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: object = None,
    ) -> str:
        if self.limited:
            self.limited -= 1
            raise RateLimited("429", retry_after=2.0, refused=True)
        return await super().post(channel, content, key=key, pace=pace)


async def test_a_429_is_waited_out_and_a_gone_channel_reported() -> None:
    clock, slept = FakeClock(), []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    adapter = LimitedOnce("discord")
    adapter.gone_channels.add(channel(2))
    rehearsals = Rehearsals(clock, sleep)
    rehearsals.attach({DISCORD: adapter}, {})
    outcome = await rehearsals.rehearse("b", "B", [channel(1), channel(2)], keep=False)
    await rehearsals.settled()
    assert [c for c, _ in outcome.posted] == [channel(1)]
    assert [f.channel for f in outcome.failed] == [channel(2)]
    assert "unknown channel" in outcome.failed[0].why
    assert 2.0 in slept
    assert slept[-1] == KEEP_S
    assert adapter.deleted_messages == {outcome.posted[0][1]}


def test_the_reply_lists_at_most_so_many_failures() -> None:
    failed = tuple(Failed(channel(n), "gone") for n in range(SHOWN_FAILURES + 5))
    text = Outcome((), failed, kept=False).summary("b")
    assert text.startswith(f"Rehearsal of b posted to 0 of {SHOWN_FAILURES + 5} channels;")
    assert text.count("\n- ") == SHOWN_FAILURES + 1
    assert text.endswith("- and 5 more (the log lists every one)")


async def test_no_running_adapters_no_rehearsal() -> None:
    with pytest.raises(CommandError):
        await Rehearsals(FakeClock()).rehearse("b", "B", [channel(1)], keep=True)
