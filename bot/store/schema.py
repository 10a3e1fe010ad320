"""The tables, as the latest revision leaves them (``tests/store/test_migrations.py`` checks
that Alembic finds no difference between the two, on SQLite and PostgreSQL).

Changing a table here is not enough: add a revision (``make migration MSG=...``, see
:mod:`bot.store.migrations`) that makes the same change to existing stores.

A plug-in's own tables are not here: it declares them and ships their revisions itself
(``Plugin.tables``, :mod:`bot.store.migrations`), as Slack does its installations.

Conventions: timestamps are :class:`~bot.store.types.UTCDateTime` (aware, UTC); vote maps, choice
lists and raw tallies are JSON text; enum values are stored as their string values; there are no
server-side defaults, every value is written by the code.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from bot.store.types import Id, UTCDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

SLUG = String(64)
"""A count id (``Count.id`` is a slug of at most 64 characters)."""
FIGURE = BigInteger
"""A figure (ballots, votes) or a sequence number: 64 bits (revision 0003), since a count's
figures are not ours to bound to 2^31 (vote maps are JSON text, unbounded)."""
OWNER = String(160)
"""A count's owner: ``operator`` or a tenant, ``platform:place`` (revision 0006)."""
WORD = String(32)
"""An enum value or a choice id."""

counts = Table(
    "counts",
    metadata,
    Column("id", SLUG, primary_key=True),
    Column("title", Text, nullable=False),
    Column("choices", Text, nullable=False),  # JSON: [[id, label], ...] in display order
    Column("rule_kind", WORD, nullable=False),
    Column("tie_holder", WORD, nullable=True),
    Column("threshold", WORD, nullable=True),  # "2/3"
    Column("eligible", FIGURE, nullable=True),
    Column("received", FIGURE, nullable=True),
    Column("status", WORD, nullable=False),
    # revision 0006: who it belongs to, who may see it, and what chat made of it
    Column("owner", OWNER, nullable=False),  # "operator" or "platform:place"
    Column("public", Boolean, nullable=False),
    Column("archived", Boolean, nullable=False),
    Column("source", Text, nullable=True),  # JSON: a source set from chat; NULL: the file's
    Column("edited_by", Text, nullable=True),  # who last changed it in chat; NULL: nobody
    Column("pace", Boolean, nullable=False),  # revision 0010: say the pace of counting
    Index(None, "owner"),
)

tallies = Table(
    "tallies",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("count_id", SLUG, ForeignKey("counts.id"), nullable=False),
    Column("seq", FIGURE, nullable=False),
    Column("votes", Text, nullable=False),  # JSON: {choice_id: votes}
    Column("observed_at", UTCDateTime, nullable=False),
    Column("source", Text, nullable=False),
    Column("void", FIGURE, nullable=False),
    Column("challenged", FIGURE, nullable=False),
    Column("received", FIGURE, nullable=True),
    Column("state", WORD, nullable=False),
    Column("correction", Boolean, nullable=False),
    # revision 0011: challenges sustained, and the headline each update was published with
    Column("sustained", FIGURE, nullable=False, server_default="0"),
    Column("headline", Text, nullable=True),  # NULL: published before revision 0011
    UniqueConstraint("count_id", "seq"),
)
"""Accepted tallies, the history of each count; ``seq`` runs 1, 2, 3... per count."""

rejected_tallies = Table(
    "rejected_tallies",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("count_id", SLUG, nullable=False),  # no foreign key: the count may be unknown
    Column("tally", Text, nullable=False),  # JSON: the whole tally as received
    Column("reason", String(64), nullable=False),
    Column("detail", Text, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Index(None, "count_id", "id"),
)

subscriptions = Table(
    "subscriptions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("platform", WORD, nullable=False),
    Column("workspace", String(128), nullable=False),
    Column("channel", String(128), nullable=False),
    Column("count_id", SLUG, ForeignKey("counts.id"), nullable=False),
    Column("mode", WORD, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("disabled_reason", Text, nullable=True),
    Column("created_by", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("live_message_id", Text, nullable=True),
    # revision 0007: what it hears besides ``mode`` (now the words: "live calls", ...)
    Column("close_votes", FIGURE, nullable=True),
    Column("close_tenths", Integer, nullable=True),  # close=2.5% -> 25
    Column("mention", String(128), nullable=True),  # a role or user group id
    Column("thread", Boolean, nullable=False),
    Column("pin", Boolean, nullable=False),
    Column("thread_message_id", Text, nullable=True),
    # revision 0019: Discord announcement channels (publish), and following one (via=)
    Column("publish", Boolean, nullable=False),
    Column("via", String(128), nullable=True),  # the announcement channel it follows
    Column("follow_webhook", String(128), nullable=True),  # the webhook the follow made
    UniqueConstraint("platform", "workspace", "channel", "count_id"),
    Index(None, "count_id"),
)

follows = Table(
    "follows",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("platform", WORD, nullable=False),
    Column("user_id", String(128), nullable=False),
    Column("count_id", SLUG, ForeignKey("counts.id"), nullable=False),
    Column("workspace", String(128), nullable=False),  # where it was made: its visibility
    Column("channel", String(128), nullable=False),
    Column("inbox", String(128), nullable=False),  # the person's direct-message channel
    Column("mode", WORD, nullable=False),  # what it hears, in subscribe's words
    Column("close_votes", FIGURE, nullable=True),
    Column("close_tenths", Integer, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("platform", "user_id", "count_id"),
    Index(None, "count_id"),
)
"""People following a count by direct message (revision 0017; ``bot.store.follows``): one row
per platform, person and count, with the place it was made in and the person's DM channel."""

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False),
    Column("actor", Text, nullable=False),
    Column("action", String(64), nullable=False),
    Column("count_id", SLUG, nullable=True),  # no foreign key: audit outlives what it names
    Column("old", Text, nullable=True),
    Column("new", Text, nullable=True),
    Column("allowed", Boolean, nullable=False),
    Column("detail", Text, nullable=False),
    Index(None, "count_id", "id"),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    # No foreign key: a delivery carries its own channel and outlives its subscription.
    # NULL for deliveries that belong to no subscription (alerts to an admin channel).
    Column("subscription_id", Id, nullable=True),
    Column("platform", WORD, nullable=False),
    Column("workspace", String(128), nullable=False),
    Column("channel", String(128), nullable=False),
    Column("count_id", SLUG, nullable=False),
    Column("tally_seq", FIGURE, nullable=True),
    Column("action", WORD, nullable=False),
    Column("significant", Boolean, nullable=False),
    Column("payload", Text, nullable=False),  # JSON text, as given
    Column("created_at", UTCDateTime, nullable=False),
    Column("status", WORD, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("sending_at", UTCDateTime, nullable=True),
    Column("sent_at", UTCDateTime, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("platform_message_id", Text, nullable=True),  # migration 2
    # Revision 0008: the instance whose claim a SENDING delivery is under, and until when.
    Column("claimed_by", String(128), nullable=True),
    Column("claim_expires_at", UTCDateTime, nullable=True),
    Index(None, "platform", "status", "id"),  # migration 2
    Index(None, "platform", "workspace", "channel", "id"),  # revision 0008: channel order
    Index(None, "subscription_id", "status"),
    Index(None, "count_id", "created_at"),  # revision 0016: a count's recent alerts
    Index(None, "platform", "status", "action", "significant", "id"),  # 0021: claims by kind
)
"""The delivery queue: one row per message to post or edit, worked through by status."""

push_receipts = Table(
    "push_receipts",
    metadata,
    Column("count_id", SLUG, primary_key=True),
    Column("signature", String(128), primary_key=True),  # "v1=" + 64 hex digits
    Column("received_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Index(None, "expires_at"),
)
"""Signed pushes taken in, each kept while its signature is fresh (revision 0004), so that a
replay inside that window is recognised (``bot.store.push_receipts``); by count and signature
(a ``v0`` signature is the same for one body sent to two counts)."""

request_receipts = Table(
    "request_receipts",
    metadata,
    Column("digest", String(64), primary_key=True),  # SHA-256 hex of what names the request
    Column("expires_at", UTCDateTime, nullable=False),
    Index(None, "expires_at"),
)
"""Signed chat-platform requests taken in (Slack's HTTP mode), each kept while its signature
verifies (revision 0016; ``bot.store.request_receipts``), so that a replay reaching another
instance sharing the store is dropped too."""

sent_ledger = Table(
    "sent_ledger",
    metadata,
    Column("platform", WORD, primary_key=True),
    Column("place", String(128), primary_key=True),  # where ids count: a chat, a channel
    Column("message", FIGURE, primary_key=True),
    Column("settled", Boolean, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("key", String(64), nullable=True),  # revision 0015: the delivery it carries
    Column("silent", Boolean, nullable=False),  # revision 0015: sent without a notification
)
"""What a platform's adapter knows of its own numbered messages, per place (revision 0005,
``bot.store.sent_ledger``): each row one message of the bot's, a delivery's copy (``key``: the
delivery's key; ``silent``: sent without a notification) or, with no key, a command reply. Kept
so that an exactly-once repair after a restart still knows what is whose and where to look."""

sent_doubts = Table(
    "sent_doubts",
    metadata,
    Column("platform", WORD, primary_key=True),
    Column("place", String(128), primary_key=True),
    Column("key", String(64), primary_key=True),
    Column("floor", FIGURE, nullable=True),
    Column("blind", Integer, nullable=False),
    Column("at", UTCDateTime, nullable=False),
)
"""Sends of a delivery whose answer is not in ``sent_ledger`` yet (revision 0015,
``bot.store.sent_ledger``): written before the request goes out, so that after a crash or a
lost answer the repair knows a copy may exist, and above which id (``floor``: the highest id
known in the place then; None: nothing known). ``blind``: 1 while a silent send of the repair
is on its way, 2 once one's answer was lost. Deleted once the repair has accounted for every
copy."""

count_admins = Table(
    "count_admins",
    metadata,
    Column("count_id", SLUG, ForeignKey("counts.id"), primary_key=True),
    Column("kind", WORD, primary_key=True),  # "user" or "role"
    Column("subject", String(128), primary_key=True),  # a user id or a role id
    Column("granted_by", Text, nullable=False),
    Column("granted_at", UTCDateTime, nullable=False),
)
"""Per-count grants (revision 0006; ``bot.store.grants``): who else may administer a count,
inside the tenant that owns it."""

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("owner", OWNER, nullable=False),
    Column("digest", String(64), nullable=False),  # hex SHA-256 of the token; never the token
    Column("created_by", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime, nullable=True),
    UniqueConstraint("digest"),
    Index(None, "owner"),
)
"""A tenant's keys for the push API (revision 0006; ``bot.store.api_keys``), kept hashed."""

place_alerts = Table(
    "place_alerts",
    metadata,
    Column("owner", OWNER, primary_key=True),
    Column("platform", WORD, nullable=False),
    Column("workspace", String(128), nullable=False),
    Column("channel", String(128), nullable=False),
    Column("set_by", Text, nullable=False),
    Column("set_at", UTCDateTime, nullable=False),
)
"""Where each place's alerts go (revision 0013; ``bot.store.place_alerts``): the channel its
admins chose (``alerts here``), else the one its first count was made in."""

schedules = Table(
    "schedules",
    metadata,
    Column("count_id", SLUG, ForeignKey("counts.id"), primary_key=True),
    Column("kind", WORD, nullable=False),  # "starts" or "resumes"
    Column("at", UTCDateTime, nullable=False),
    Column("remind_before", Integer, nullable=True),  # seconds; NULL: the configured default
    Column("moved_from", UTCDateTime, nullable=True),  # the time before it was last changed
    Column("set_by", Text, nullable=False),
    Column("set_at", UTCDateTime, nullable=False),
)
"""When a count starts or resumes (revision 0018; ``bot.store.schedules``): one a count."""

reminders = Table(
    "reminders",
    metadata,
    Column("count_id", SLUG, primary_key=True),
    Column("kind", WORD, primary_key=True),
    Column("at", UTCDateTime, primary_key=True),
    Column("queued_at", UTCDateTime, nullable=False),
    Column("deliveries", Integer, nullable=False),
)
"""The reminders queued (revision 0018): one row per count, kind and scheduled time, written in
the transaction that queues the reminder's deliveries, so that it is queued exactly once
whichever instance, restart or crash comes first (``bot.store.schedules.claim_reminder``)."""

leases = Table(
    "leases",
    metadata,
    Column("name", String(160), primary_key=True),  # "poll:COUNT", "shard:N"
    Column("holder", String(128), nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)
"""What one instance at a time holds (revision 0008; ``bot.store.leases``): a count's polling,
a shard. A lease not renewed by ``expires_at`` may be taken by another instance."""

rate_buckets = Table(
    "rate_buckets",
    metadata,
    Column("name", String(160), primary_key=True),  # "discord:global"
    Column("next_at", UTCDateTime, nullable=False),
)
"""Rate budgets shared by every instance (revision 0008; ``bot.store.buckets``): for each, the
first turn not yet handed out. Instances reserve turns from it, so that together they keep to
one budget per bot."""
