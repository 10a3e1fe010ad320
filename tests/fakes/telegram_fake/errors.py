"""Bot API error answers: ``{"ok": false, "error_code", "description", "parameters"?}``.

Descriptions follow what api.telegram.org answers (tdlib's telegram-bot-api). Those marked
"unofficial" in a docstring are observed or best guesses, not documented.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
GETUPDATES_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"


class ApiError(Exception):
    """An error answer. ``retry_after`` / ``migrate_to_chat_id`` go into ``parameters``."""

    def __init__(
        self,
        code: int,
        description: str,
        *,
        retry_after: int | None = None,
        migrate_to_chat_id: int | None = None,
    ) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.retry_after = retry_after
        self.migrate_to_chat_id = migrate_to_chat_id

    def body(self) -> JSON:
        out: JSON = {"ok": False, "error_code": self.code, "description": self.description}
        parameters: JSON = {}
        if self.retry_after is not None:
            parameters["retry_after"] = self.retry_after
        if self.migrate_to_chat_id is not None:
            parameters["migrate_to_chat_id"] = self.migrate_to_chat_id
        if parameters:
            out["parameters"] = parameters
        return out


def bad_request(detail: str) -> ApiError:
    """400 "Bad Request: <detail>"."""
    return ApiError(400, f"Bad Request: {detail}")


def forbidden(detail: str) -> ApiError:
    """403 "Forbidden: <detail>"."""
    return ApiError(403, f"Forbidden: {detail}")


def too_many_requests(retry_after: int) -> ApiError:
    """429 with ``parameters.retry_after`` in whole seconds (and a Retry-After header)."""
    return ApiError(429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after)


def cant_parse(detail: str) -> ApiError:
    """A parse_mode error, e.g. "Bad Request: can't parse entities: Unsupported start tag ..."."""
    return bad_request(f"can't parse entities: {detail}")


class InternalFakeError(Exception):
    """A bug in the fake itself; answered 500 and raised again when the fake stops."""


class Described:
    """A successful result that carries a description too ("Webhook was set")."""

    def __init__(self, result: Any, description: str) -> None:
        self.result = result
        self.description = description
