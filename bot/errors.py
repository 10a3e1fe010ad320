"""Every error tallybot raises on purpose derives from one root.

    TallybotError
    ├── ConfigError          a configuration file or value is wrong (names file, key, problem)
    ├── CommandError         a user's command cannot be carried out (one line: what to type)
    │   └── NotAuthorized    an admin command from someone who is not an admin
    ├── StoreError           the store could not be read or written
    ├── SourceError          a tally source failed
    │   ├── TransientSourceError   worth retrying (timeout, connection reset, 5xx, 429)
    │   └── PermanentSourceError   not worth retrying until someone fixes it (404, bad mapping)
    ├── DeliveryError        a platform refused or failed a send
    │   ├── TransientDeliveryError  worth retrying (timeout, 5xx, 429), may carry retry_after
    │   │   └── RateLimited         a 429: wait and try again; never counts as a failed attempt
    │   ├── PermanentDeliveryError  the channel is gone or the bot lost its permissions
    │   ├── MessageGone             a message to edit (a live scoreboard) no longer exists
    │   └── DeliveryCancelled       the delivery must not go out (its subscription is gone)
    ├── ChartError           a chart could not be drawn (its drawing process died)
    ├── RequestError         a request to the ops server is refused (carries the HTTP status)
    ├── Replayed             a signed push came again after its figures were superseded
    └── PushError            ``tallybot push`` got no answer from the server

Third-party errors are translated where they enter the bot (``raise SourceError(...) from exc``),
so the core never needs to know about aiohttp, discord.py or slack_sdk exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence


class TallybotError(Exception):
    """Root of every error tallybot raises on purpose."""


class ConfigError(TallybotError):
    """A configuration file or value is wrong.

    ``problems`` lists each problem found, one line each (``FILE: KEY: PROBLEM``); a checker that
    reads a whole file reports them all at once with :meth:`of`.
    """

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) or (message,)

    @classmethod
    def of(cls, problems: Sequence[str]) -> ConfigError:
        """One error for every problem in ``problems`` (at least one)."""
        if len(problems) == 1:
            return cls(problems[0])
        listed = "\n".join(f"  {p}" for p in problems)
        return cls(f"{len(problems)} problems:\n{listed}", problems=problems)


class CommandError(TallybotError):
    """A user's command cannot be carried out; the message is shown to the user as is."""


class NotAuthorized(CommandError):
    """An admin command from someone who is not an admin."""


class NotTheirs(NotAuthorized):
    """An admin command on a tenant's count from someone who does not administer it (the audit
    log records ``audit``, not the platform policy's reason)."""

    def __init__(self, message: str, audit: str | None = None) -> None:
        super().__init__(message)
        self.audit = audit if audit is not None else f"refused: {message}"


class StoreError(TallybotError):
    """The store could not be read or written."""


class SourceError(TallybotError):
    """A tally source failed."""


class TransientSourceError(SourceError):
    """A source failure worth retrying."""


class PermanentSourceError(SourceError):
    """A source failure not worth retrying until someone fixes it."""


class DeliveryError(TallybotError):
    """A platform refused or failed a send."""


class TransientDeliveryError(DeliveryError):
    """A send failure worth retrying; ``retry_after`` is the platform's hint in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(TransientDeliveryError):
    """The platform answered 429: nothing went wrong with the delivery, it waits ``retry_after``
    and goes again (not counted as a failed attempt). ``refused``: the 429 answered the one and
    only try of the request (no client library retried it), so surely nothing was carried out:
    a delivery whose attempt it was is not in doubt."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, refused: bool = False
    ) -> None:
        super().__init__(message, retry_after=retry_after)
        self.refused = refused


class PermanentDeliveryError(DeliveryError):
    """The channel is gone or the bot lost its permissions: retrying will not help.

    ``cause`` says why in words that do not name the channel, when the platform knows it (the
    bot was removed from the server); ``fix``, what the place's admins do about it. The alerts
    of the channels one cause stopped in one server or workspace are told as one
    (``bot.delivery.alert_groups``)."""

    def __init__(self, message: str, *, cause: str | None = None, fix: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.fix = fix


class ChannelMoved(PermanentDeliveryError):
    """The channel has a new id on its platform (a Telegram group became a supergroup): its
    subscriptions and deliveries move there (``bot.store.channel_moves``) and go on."""

    def __init__(self, message: str, *, workspace: str, channel: str) -> None:
        super().__init__(message)
        self.workspace = workspace
        self.channel = channel


class MessageGone(DeliveryError):
    """A message to edit (a live scoreboard) was deleted or can no longer be edited."""


class NotAllowedHere(PermanentDeliveryError):
    """The bot may not start a thread or pin a message in the channel (it may still post
    there): the subscription goes on without that option, and says so once."""


class DeliveryCancelled(DeliveryError):
    """The delivery was cancelled before its request went out (its subscription was removed or
    disabled meanwhile): it is dropped, never sent."""


class ChartError(TallybotError):
    """A chart could not be drawn: the process that draws charts died (killed, out of memory)
    before it answered, or the chart was ``abandoned`` (it took longer than its time bound).
    The next chart starts a new one."""

    def __init__(self, message: str, *, abandoned: bool = False) -> None:
        super().__init__(message)
        self.abandoned = abandoned


class RequestError(TallybotError):
    """A request to the ops server is refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class Replayed(TallybotError):
    """A signed push already taken in arrived again while its signature is still fresh, and its
    figures are not the ones shown (a replay: refused, and nothing stored)."""


class PushError(TallybotError):
    """``tallybot push`` got no answer from the server (unreachable, timed out)."""
