"""``tallybot doctor --config FILE``: the day before a count, what each enabled platform would
refuse the bot, found without posting anything.

The configuration is checked as ``run`` checks it (:mod:`bot.runtime.preflight`), then the store's
subscriptions are read, and each enabled platform's plug-in checks, with the real tokens, what
the bot needs there (``Plugin.doctor``, :mod:`bot.ops.checkup`): the token, the intents or scopes,
each subscribed channel's rights. One line per problem, with the fix; a channel subscribed on a
platform that is not enabled is one too. Nothing is posted: ``/count rehearse`` does that.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from bot.domain.subscription import ChannelRef, Platform, Wants
from bot.ops.checkup import Checkup, Problem, Subscribed
from bot.runtime import preflight
from bot.runtime.plugins import platform_secrets
from bot.settings.loader import Config
from bot.settings.secrets import store_url
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows


async def subscribed(
    cfg: Config, env: Mapping[str, str] | None = None
) -> dict[Platform, tuple[Subscribed, ...]]:
    """Every channel with an enabled subscription to a count that is not archived, by platform."""
    by_channel: dict[ChannelRef, list[tuple[str, Wants]]] = defaultdict(list)
    url = store_url(cfg.store_url, cfg.store_password_env, env)
    db = Database(url, plugins=cfg.plugins.tables())
    async with db, db.connect() as conn:
        for count in await count_rows.all_counts(conn):
            for sub in await sub_rows.for_count(conn, count.id):
                if sub.wants.via is None:  # a follower: Discord posts there, not the bot
                    by_channel[sub.channel].append((count.id, sub.wants))
    out: dict[Platform, list[Subscribed]] = defaultdict(list)
    for channel, subs in by_channel.items():
        counts = tuple(c for c, _ in subs)
        out[channel.platform].append(Subscribed(channel, counts, tuple(w for _, w in subs)))
    return {p: tuple(s) for p, s in out.items()}


async def examine(
    cfg: Config, env: Mapping[str, str] | None = None
) -> tuple[list[Problem], list[str]]:
    """The problems found, and a note per platform that has no checks."""
    secrets = platform_secrets(cfg, env)
    channels = await subscribed(cfg, env)
    problems: list[Problem] = []
    notes: list[str] = []
    for platform, subs in sorted(channels.items()):
        if platform not in cfg.platforms:
            problems += [
                Problem(
                    str(s.channel),
                    f"subscribed to {', '.join(s.counts)} but [{platform}] is not enabled",
                    f"enable [{platform}] in the configuration, or unsubscribe the channel",
                )
                for s in subs
            ]
    for platform, settings in sorted(cfg.platforms.items()):
        plugin = cfg.plugins[platform]
        if plugin.doctor is None:
            notes.append(f"{platform}: no checks for this platform")
            continue
        checkup = Checkup(secrets.platforms.get(platform, {}), channels.get(platform, ()))
        problems += await plugin.doctor(settings, checkup)
    return problems, notes


async def doctor(path: Path, env: Mapping[str, str] | None = None) -> tuple[int, list[str]]:
    """Exit status (0: no problem) and the lines to print."""
    cfg = preflight.load_checked(path, env)
    problems, notes = await examine(cfg, env)
    lines = [p.line() for p in problems] + notes
    if not problems:
        lines.append(f"{path}: no problem found ({preflight.summary(cfg)})")
    return (1 if problems else 0), lines
