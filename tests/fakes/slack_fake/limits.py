"""Rate limits and Block Kit / message validation, the way Slack applies them.

The limiters (:mod:`tests.fakes.loopback.limits`) take the time from an injected clock so tests can
drive it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tests.fakes.loopback.limits import SlidingWindow, TokenBucket

MAX_TEXT_CHARS = 40_000
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_BLOCK_ID = 255
KNOWN_BLOCK_TYPES = frozenset(
    {
        "actions",
        "context",
        "divider",
        "file",
        "header",
        "image",
        "input",
        "markdown",
        "rich_text",
        "section",
        "video",
    }
)
TEXT_OBJECT_TYPES = frozenset({"plain_text", "mrkdwn"})


class SlackError(Exception):
    """An `ok: false` answer: `error` is the Slack error code."""

    def __init__(self, error: str, *, status: int = 200) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


class RateLimitedError(Exception):
    """HTTP 429: `retry_after` is the wait in seconds before a token is free."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"ratelimited, retry after {retry_after:.3f}s")
        self.retry_after = retry_after


def take(limiter: SlidingWindow | TokenBucket) -> None:
    """Count one request on ``limiter``, or raise RateLimitedError with the wait."""
    wait = limiter.try_take()
    if wait > 0:
        raise RateLimitedError(wait)


def retry_after_header(wait: float, override: int | None) -> str:
    """Slack sends whole seconds; a wait of 0.2 s is announced as 1."""
    if override is not None:
        return str(override)
    return str(max(1, math.ceil(wait)))


# ---------------------------------------------------------------- validation


def parse_json_arg(value: Any, *, error: str) -> Any:
    """Form-encoded requests carry blocks/metadata/files as JSON strings."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise SlackError(error) from exc
    return value


def validate_text(text: Any) -> str:
    if text is None:
        return ""
    if not isinstance(text, str):
        raise SlackError("invalid_arguments")
    if len(text) > MAX_TEXT_CHARS:
        raise SlackError("msg_too_long")
    return text


def _text_object(obj: Any, *, max_len: int, plain_only: bool = False) -> None:
    if not isinstance(obj, dict):
        raise SlackError("invalid_blocks")
    kind = obj.get("type")
    if kind not in TEXT_OBJECT_TYPES or (plain_only and kind != "plain_text"):
        raise SlackError("invalid_blocks")
    text = obj.get("text")
    if not isinstance(text, str) or not text or len(text) > max_len:
        raise SlackError("invalid_blocks")


def validate_blocks(raw: Any) -> list[dict[str, Any]] | None:
    """Return the blocks as a list, or raise `invalid_blocks` / `invalid_blocks_format`."""
    if raw is None:
        return None
    blocks = parse_json_arg(raw, error="invalid_blocks_format")
    if not isinstance(blocks, list):
        raise SlackError("invalid_blocks_format")
    if len(blocks) > MAX_BLOCKS:
        raise SlackError("invalid_blocks")
    for block in blocks:
        _validate_block(block)
    return blocks


def _validate_block(block: Any) -> None:
    if not isinstance(block, dict) or block.get("type") not in KNOWN_BLOCK_TYPES:
        raise SlackError("invalid_blocks")
    block_id = block.get("block_id")
    if block_id is not None and (not isinstance(block_id, str) or len(block_id) > MAX_BLOCK_ID):
        raise SlackError("invalid_blocks")
    kind = block["type"]
    if kind == "section":
        text, fields = block.get("text"), block.get("fields")
        if text is None and fields is None:
            raise SlackError("invalid_blocks")
        if text is not None:
            _text_object(text, max_len=MAX_SECTION_TEXT)
        if fields is not None:
            if not isinstance(fields, list) or not fields or len(fields) > MAX_SECTION_FIELDS:
                raise SlackError("invalid_blocks")
            for field in fields:
                _text_object(field, max_len=MAX_FIELD_TEXT)
    elif kind == "header":
        _text_object(block.get("text"), max_len=MAX_HEADER_TEXT, plain_only=True)
    elif kind == "context":
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements or len(elements) > MAX_CONTEXT_ELEMENTS:
            raise SlackError("invalid_blocks")
        for element in elements:
            if not isinstance(element, dict) or element.get("type") not in (
                TEXT_OBJECT_TYPES | {"image"}
            ):
                raise SlackError("invalid_blocks")


def validate_metadata(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    metadata = parse_json_arg(raw, error="invalid_metadata_format")
    if not isinstance(metadata, dict):
        raise SlackError("invalid_metadata_format")
    event_type = metadata.get("event_type")
    payload = metadata.get("event_payload")
    if not isinstance(event_type, str) or not event_type or not isinstance(payload, dict):
        raise SlackError("invalid_metadata_schema")
    return metadata
