"""A count's settings as typed in chat, for ``create`` and ``edit``: one line, like ``update``.

    create local-7 Local 7 strike vote choices=yes:Strike,no:"No strike" tie=no received=412
    edit local-7 title="Local 7 strike authorisation" eligible=450 public=yes
    edit local-7 source=https://example.org/local7.json fields=yes:results.0,no:results.1

Keys (``key=value``; a value with spaces in double quotes): ``title`` (for ``create`` the words
that are not settings are the title too), ``choices`` (``id:Label,id:Label``; ids are fixed once
made), ``rule`` (``majority``, ``plurality``, ``threshold``), ``tie`` (the tie holder, or
``none``), ``threshold`` (``2/3``), ``received`` and ``eligible`` (figures, or ``none``),
``public`` and ``pace`` (``yes``/``no``; ``pace``: say the pace of counting), ``source``
(``manual`` or an ``http(s)`` URL of a JSON or CSV document; CSV when it ends in ``.csv`` or
with ``format=csv``), ``fields`` (where each figure is in the document:
``yes:results.0.count,void:void``; by default a choice's own id).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction

from pydantic import ValidationError

from bot.base.egress import EgressPolicy, EgressRefused, check_url
from bot.commands.args import NUMBER
from bot.domain.model import MAX_FIGURE, Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.errors import CommandError, ConfigError
from bot.ingest.sources.settings import HttpCsvSettings, HttpJsonSettings

KEYS = (
    "title",
    "choices",
    "rule",
    "tie",
    "threshold",
    "received",
    "eligible",
    "public",
    "pace",
    "source",
    "format",
    "fields",
)
FIGURE_TARGETS = ("void", "challenged", "received", "state")
CHOICE = re.compile(r"^([a-z0-9][a-z0-9_-]{0,31})(?::(.+))?$")
ChatSource = HttpJsonSettings | HttpCsvSettings


def settings_words(words: list[str]) -> list[str]:
    """``words`` with double-quoted stretches joined: ``title="a b"`` is one word ``title=a b``.
    Apostrophes are left alone (``Workers' vote``)."""
    text = " ".join(words)
    found = re.findall(r'(?:[^\s"]*"[^"]*"[^\s"]*)+|\S+', text)
    return [w.replace('"', "") for w in found]


def _choices(text: str) -> tuple[Choice, ...]:
    made = []
    for part in text.split(","):
        m = CHOICE.match(part.strip())
        if m is None:
            raise CommandError(
                f"choice {part.strip()[:40]!r}: write id:Label, the id in lowercase letters, "
                "digits, - or _ (e.g. choices=yes:Yes,no:No)"
            )
        made.append(Choice(m.group(1), (m.group(2) or m.group(1)).strip()))
    return tuple(made)


def _figure(key: str, text: str) -> int | None:
    if text.lower() == "none":
        return None
    if not NUMBER.match(text):
        raise CommandError(f"{key}={text[:40]}: a whole number (or none)")
    value = int(text.replace(",", ""))
    if value > MAX_FIGURE:
        raise CommandError(f"{key} is too large: figures are at most {MAX_FIGURE:,}")
    return value


def flag(key: str, text: str) -> bool:
    if text.lower() in ("yes", "true", "on"):
        return True
    if text.lower() in ("no", "false", "off"):
        return False
    raise CommandError(f"{key}={text[:20]}: yes or no")


def _threshold(text: str) -> Fraction:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise CommandError(f"threshold={text[:20]}: a fraction such as 2/3") from None


def count_from(
    count_id: str,
    given: Mapping[str, str],
    *,
    title: str | None,
    base: Count | None,
    owner: str,
) -> Count:
    """The count ``given`` describes: a new one (``base`` None), or ``base`` changed."""
    if base is None:
        if not title:
            raise CommandError("a new count needs a title: create <count> <title> choices=...")
        if "choices" not in given:
            raise CommandError("a new count needs its choices, e.g. choices=yes:Yes,no:No")
        try:
            base = Count(
                count_id,
                title,
                _choices(given["choices"]),
                DecisionRule(RuleKind.MAJORITY),
                status=CountStatus.COUNTING,
                owner=owner,
            )
        except ConfigError as exc:
            raise CommandError(str(exc).removeprefix(f"count {count_id!r}: ")) from None
    elif "choices" in given:
        choices = _choices(given["choices"])
        if [c.id for c in choices] != list(base.choice_ids):
            raise CommandError(
                f"the choices of {base.id} are {', '.join(base.choice_ids)}: their labels may "
                "change, not the ids or their order"
            )
        base = replace(base, choices=choices)
    rule = base.rule
    if "rule" in given:
        try:
            rule = replace(rule, kind=RuleKind(given["rule"].lower()))
        except ValueError:
            raise CommandError("rule: majority, plurality or threshold") from None
    if "tie" in given:
        tie = given["tie"].lower()
        rule = replace(rule, tie_holder=None if tie == "none" else tie)
    if "threshold" in given:
        rule = replace(rule, threshold=_threshold(given["threshold"]))
    elif rule.kind is not RuleKind.THRESHOLD:
        rule = replace(rule, threshold=None)
    changes: dict[str, object] = {"rule": rule}
    if title:
        changes["title"] = title
    for key in ("received", "eligible"):
        if key in given:
            changes[key] = _figure(key, given[key])
    if "public" in given:
        changes["public"] = flag("public", given["public"])
    if "pace" in given:
        changes["pace"] = flag("pace", given["pace"])
    try:
        count = replace(base, **changes)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise CommandError(str(exc).removeprefix(f"count {count_id!r}: ")) from None
    eligible, received = count.eligible, count.received
    if eligible is not None and received is not None and received > eligible:
        raise CommandError(f"received ({received:,}) is more than eligible ({eligible:,})")
    return count


def source_from(count: Count, given: Mapping[str, str], egress: EgressPolicy) -> ChatSource | None:
    """The source ``source=URL`` (with ``format`` and ``fields``) describes; None for
    ``source=manual``. Only http(s) documents: a count made in chat reads no file and no
    environment variable of the operator's. The URL meets the egress guard's checks at once
    (scheme, host list, an address literal); a name's addresses are checked at every fetch."""
    url = given["source"]
    if url.lower() == "manual":
        return None
    try:
        check_url(url, egress)
    except EgressRefused as exc:
        raise CommandError(f"source: {exc}") from None
    fields: dict[str, object] = {}
    votes: dict[str, str] = {}
    for part in filter(None, given.get("fields", "").split(",")):
        key, sep, path = part.partition(":")
        if not sep or not path:
            raise CommandError(f"fields: {part[:40]!r}: write name:where (e.g. yes:results.0)")
        if key in FIGURE_TARGETS:
            fields[key] = path
        elif key in count.choice_ids:
            votes[key] = path
        else:
            raise CommandError(f"fields: {key[:32]!r} is not a choice of {count.id}")
    fmt = given.get("format", "csv" if url.lower().split("?")[0].endswith(".csv") else "json")
    if fmt not in ("json", "csv"):
        raise CommandError("format: json or csv")
    table = {"kind": f"http_{fmt}", "url": url, "fields": {"votes": votes, **fields}}
    model = HttpCsvSettings if fmt == "csv" else HttpJsonSettings
    try:
        return model.model_validate(table)
    except (ValidationError, ConfigError) as exc:
        raise CommandError(f"source: {_first(exc)}") from None


def stored(source: ChatSource | None) -> str | None:
    """``source`` as the store keeps it (JSON with its ``kind``, without defaults)."""
    if source is None:
        return None
    return json.dumps(
        {"kind": source.kind, **source.model_dump(mode="json", exclude_defaults=True)}
    )


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        return f"{where}: {error['msg']}"[:200]
    return str(exc)[:200]
