"""A strict local fake of Slack for end-to-end tests against the real slack_sdk / slack_bolt.

`FakeSlack` serves, on 127.0.0.1 with an OS-chosen port:
- `/api/<method>`: the Web API (query, urlencoded, multipart or JSON bodies; Bearer token);
- `/upload/v1/<secret>`: the upload URL of the v2 file upload flow;
- `/commands/<team>/<hook>/<secret>`: response_url endpoints handed out with slash commands;
- `/socket?ticket=...`: Socket Mode (single-use tickets from apps.connections.open).

Enforced like Slack: token type and validity, channel state (not found / archived / bot not
a member), message_not_found, msg_too_long (> 40,000 chars), Block Kit limits, no_text,
metadata shape, per-channel chat.postMessage token bucket and per-minute method tiers
(HTTP 429 + Retry-After in whole seconds), response_url 5 uses / 30 minutes.
Unknown methods answer `unknown_method`.
The app is the one the manifest makes (default the shipped config/slack-manifest.yml,
manifest.py): a method whose scope it lacks answers `missing_scope`, undeclared events and
commands are never sent, view_submission needs interactivity, and command text is escaped
(`<@U…|name>`) only with should_escape.

Waiting: use `await fake.wait_for(predicate)`; every recorded change wakes it.
Note for client code under test: slack_sdk sends loopback traffic to HTTPS_PROXY/HTTP_PROXY
when set (it ignores NO_PROXY), so tests should unset those variables.
"""

from .fake import FakeSlack
from .limits import MAX_BLOCKS, MAX_TEXT_CHARS
from .manifest import METHOD_SCOPES, Manifest, load_manifest
from .records import (
    ACK_DEADLINE_S,
    HttpDelivery,
    MessageRevision,
    RecordedCall,
    RecordedEphemeral,
    RecordedSlackMessage,
    RecordedUpload,
    ResponseUrlPost,
    SocketDelivery,
)
from .socket_mode import SocketConnection

__all__ = [
    "ACK_DEADLINE_S",
    "MAX_BLOCKS",
    "MAX_TEXT_CHARS",
    "METHOD_SCOPES",
    "FakeSlack",
    "HttpDelivery",
    "Manifest",
    "MessageRevision",
    "RecordedCall",
    "RecordedEphemeral",
    "RecordedSlackMessage",
    "RecordedUpload",
    "ResponseUrlPost",
    "SocketConnection",
    "SocketDelivery",
    "load_manifest",
]
