"""Domain values to and from the JSON text and plain columns the store keeps them in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

from bot.domain.model import Choice, Tally, TallyState


def votes_to_json(votes: Mapping[str, int]) -> str:
    """Encode a vote map as a JSON object, keeping the map's key order."""
    return json.dumps({str(k): int(v) for k, v in votes.items()}, separators=(",", ":"))


def votes_from_json(text: str) -> dict[str, int]:
    """Decode what :func:`votes_to_json` wrote."""
    raw: dict[str, Any] = json.loads(text)
    return {str(k): int(v) for k, v in raw.items()}


def choices_to_json(choices: tuple[Choice, ...]) -> str:
    """Encode choices as a JSON list of ``[id, label]`` pairs, in order."""
    return json.dumps([[c.id, c.label] for c in choices], ensure_ascii=False)


def choices_from_json(text: str) -> tuple[Choice, ...]:
    """Decode what :func:`choices_to_json` wrote."""
    return tuple(Choice(str(i), str(label)) for i, label in json.loads(text))


def threshold_to_text(threshold: Fraction | None) -> str | None:
    """``Fraction(2, 3)`` -> ``"2/3"``: exact, unlike a float column."""
    return None if threshold is None else f"{threshold.numerator}/{threshold.denominator}"


def threshold_from_text(text: str | None) -> Fraction | None:
    """``"2/3"`` -> ``Fraction(2, 3)``."""
    return None if text is None else Fraction(text)


def tally_to_json(tally: Tally) -> str:
    """Encode a whole tally (every field) as JSON text, e.g. to keep a rejected one as received."""
    return json.dumps(
        {
            "count_id": tally.count_id,
            "votes": {str(k): int(v) for k, v in tally.votes.items()},
            "observed_at": tally.observed_at.isoformat(),
            "source": tally.source,
            "void": tally.void,
            "challenged": tally.challenged,
            "received": tally.received,
            "state": str(tally.state),
            "seq": tally.seq,
            "correction": tally.correction,
            "sustained": tally.sustained,
        },
        ensure_ascii=False,
    )


def tally_from_json(text: str) -> Tally:
    """Decode what :func:`tally_to_json` wrote; the result equals the tally that was encoded."""
    raw: dict[str, Any] = json.loads(text)
    received = raw["received"]
    return Tally(
        count_id=str(raw["count_id"]),
        votes={str(k): int(v) for k, v in raw["votes"].items()},
        observed_at=datetime.fromisoformat(raw["observed_at"]),
        source=str(raw["source"]),
        void=int(raw["void"]),
        challenged=int(raw["challenged"]),
        received=None if received is None else int(received),
        state=TallyState(raw["state"]),
        seq=int(raw["seq"]),
        correction=bool(raw["correction"]),
        sustained=int(raw.get("sustained", 0)),  # rows kept before revision 0010: none
    )
