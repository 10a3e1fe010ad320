"""``tallybot check-config``: the shipped examples pass as shipped; a broken file gets one clear
line per problem (every problem in the file, not only the first), and never a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bot.runtime.cli import main
from tests.firsthour.conftest import clean_env, tallybot

CONSOLE = "[console]\nenabled = true\n"
COUNT = """
[[counts]]
id = "board-2026"
title = "Board election"
rule = "plurality"
choices = [{ id = "ana" }, { id = "ben" }]
source = { kind = "manual" }
"""
OK = CONSOLE + COUNT
TOKEN = "a-realistic-token-0123456789"


def count(**lines: str) -> str:
    """A count table with keys replaced or added (TOML values as written)."""
    keys = {
        "id": '"board-2026"',
        "title": '"Board election"',
        "rule": '"plurality"',
        "choices": '[{ id = "ana" }, { id = "ben" }]',
        "source": '{ kind = "manual" }',
    }
    keys.update(lines)
    return "\n[[counts]]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items() if v)


BROKEN: list[tuple[str, str | bytes, list[str]]] = [
    ("empty", "", ["no count is configured", "no platform enabled"]),
    (
        "single-bracket-counts",
        CONSOLE + '[counts]\nid = "x"\ntitle = "X"\n',
        ["counts: expected a list, got a table: write each entry as [[counts]]"],
    ),
    ("wrongtype-id", CONSOLE + count(id="5"), ["counts[0].id: expected text, got 5 (an integer)"]),
    (
        "sync-sqlite",
        '[store]\nurl = "sqlite:///var/t.db"\n' + OK,
        [
            "store.url: the 'pysqlite' driver does not work here (tallybot is async): write 'sqlite+aiosqlite:///var/t.db'"
        ],
    ),
    (
        "sync-postgres",
        '[store]\nurl = "postgresql://tb@db/tb"\n' + OK,
        ["store.url: the 'psycopg"],
    ),
    ("mysql", '[store]\nurl = "mysql://root@db/t"\n' + OK, ["unsupported database 'mysql'"]),
    ("not-a-url", '[store]\nurl = "tallybot.db"\n' + OK, ["store.url: 'tallybot.db' is not a"]),
    (
        "guild-name",
        '[discord]\nguilds = ["my-server"]\n' + COUNT,
        ['guilds[0]: "my-server" (text) is not a server id', "DISCORD_TOKEN is not set"],
    ),
    ("no-platform", "[console]\nenabled = false\n" + COUNT, ["no platform enabled"]),
    ("discord-no-token", "[discord]\n" + COUNT, ["discord: DISCORD_TOKEN is not set"]),
    ("slack-socket", "[slack]\n" + COUNT, ["SLACK_BOT_TOKEN is not set", "SLACK_APP_TOKEN is"]),
    (
        "slack-http",
        '[slack]\nmode = "http"\n' + COUNT,
        ["SLACK_BOT_TOKEN is not set", "SLACK_SIGNING_SECRET is not set"],
    ),
    (
        "slack-mode",
        '[slack]\nmode = "websocket"\n' + COUNT,
        [
            "slack.mode: unknown mode \"websocket\" (text) (did you mean 'socket'?); one of "
            "socket, http",
            "SLACK_BOT_TOKEN is not set",
            "SLACK_APP_TOKEN is not set",  # what the default mode needs: the rest is checked
        ],
    ),
    (
        "file-missing",
        CONSOLE + count(source='{ kind = "file", path = "feeds/board.json" }'),
        ["counts[0].source.path: no such file:"],
    ),
    (
        "replay-missing",
        CONSOLE + count(source='{ kind = "replay", path = "rec/board.jsonl" }'),
        ["counts[0].source.path: no such file:"],
    ),
    ("unknown-top-key", '[stor]\nurl = "x"\n' + OK, ["stor: unknown key (did you mean 'store'?)"]),
    (
        "three-in-one-count",
        CONSOLE + count(intervall="5", titel='"T"', rule='"majoritty"'),
        [
            "counts[0].intervall: unknown key (did you mean 'interval'?)",
            "counts[0].titel: unknown key (did you mean 'title'?)",
            "counts[0].rule: unknown rule \"majoritty\" (text) (did you mean 'majority'?)",
        ],
    ),
    ("duplicate-ids", OK + COUNT, ["counts[1].id: 'board-2026' is used twice"]),
    ("interval-too-short", CONSOLE + count(interval="0.5"), ["counts[0].interval: must be 1 to"]),
    (
        "failures-zero",
        CONSOLE + count(stale_after_failures="0"),
        ["counts[0].stale_after_failures: must be a whole number of at least 1"],
    ),
    (
        "minutes-negative",
        "[defaults]\nstale_after_minutes = -1\n" + OK,
        ["defaults.stale_after_minutes: must be above 0"],
    ),
    (
        "defaults-type",
        '[defaults]\ninterval = "fast"\n' + OK,
        ['defaults.interval: must be 1 to 86400 seconds, got "fast" (text)'],
    ),
    (
        "threshold-missing",
        CONSOLE + count(rule='"threshold"'),
        ["a threshold count needs a threshold above 1/2"],
    ),
    ("tie-holder", CONSOLE + count(tie_holder='"cho"'), ["tie_holder 'cho' is not one of"]),
    ("one-choice", CONSOLE + count(choices='[{ id = "ana" }]'), ["at least two choices"]),
    (
        "choice-string",
        CONSOLE + count(choices='["ana", "ben"]'),
        ["choices[0]: expected {", "choices[1]: expected {"],
    ),
    ("status", CONSOLE + count(status='"running"'), ['unknown status "running" (text)']),
    ("slug", CONSOLE + count(id='"Board 2026"'), ['"Board 2026" (text) is not a lowercase slug']),
    (
        "alert-ref",
        '[admins]\nalerts = ["discord-123"]\n' + OK,
        [
            "admins.alerts[0]: \"discord-123\" (text) should look like 'console:local/console' "
            "or 'discord:GUILD_ID/CHANNEL_ID' or 'slack:TEAM_ID/CHANNEL_ID'"
        ],
    ),
    (
        "server-two",
        '[server]\nport = 70000\npush_secret_env = "MY-SECRET"\n' + OK,
        ["server.port: must be 0 to 65535", "server.push_secret_env: 'MY-SECRET' is not"],
    ),
    (
        "feed-token-unset",
        CONSOLE
        + count(
            source='{ kind = "http_json", url = "https://example.org/f.json", '
            'headers_from_env = { Authorization = "FEED_TOKEN" } }'
        ),
        ["headers_from_env.Authorization: environment variable 'FEED_TOKEN' is not set"],
    ),
    (
        "secret-in-headers",
        CONSOLE
        + count(
            source='{ kind = "http_json", url = "https://example.org/f.json", '
            'headers = { Authorization = "Bearer abc" } }'
        ),
        ["headers.Authorization: Authorization is a secret and does not belong in the config"],
    ),
    (
        "url-and-timeout",
        CONSOLE + count(source='{ kind = "http_json", url = "ftp://x", timeout = "ten" }'),
        [
            "source.url: must be an http:// or https:// address",
            'source.timeout: must be a number above 0, got "ten" (text)',
        ],
    ),
    (
        "source-kind",
        CONSOLE + count(source='{ kind = "http_jsn" }'),
        ["source.kind: unknown kind \"http_jsn\" (text) (did you mean 'http_json'?); one of"],
    ),
    ("toml-syntax", OK + "\nid = = 3\n", ["not valid TOML"]),
    ("not-utf8", OK.encode() + b"\n# \xff\xfe\n", ["not UTF-8 text"]),
    (
        "store-password-unset",
        '[store]\nurl = "postgresql+asyncpg://tb@db/tb"\npassword_env = "TB_DB_PASSWORD"\n' + OK,
        ["store.password_env: TB_DB_PASSWORD is not set"],
    ),
]
"""(name, file contents, the problems each line names) for broken configurations."""

ENV_CASES: list[tuple[str, str, dict[str, str], list[str]]] = [
    (
        "short-token",
        "[discord]\n" + COUNT,
        {"DISCORD_TOKEN": "next"},
        ["DISCORD_TOKEN: only 4 characters: too short to be a real token"],
    ),
    (
        "short-push-secret",
        "[server]\n" + OK,
        {"TALLYBOT_PUSH_SECRET": "hunter2"},
        ["server.push_secret_env: TALLYBOT_PUSH_SECRET: only 7 characters"],
    ),
]


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("DISCORD_", "SLACK_", "TALLYBOT_", "FEED_", "TB_")):
            monkeypatch.delenv(name)


def check(
    tmp_path: Path, name: str, text: str | bytes, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str], Path]:
    path = tmp_path / f"{name}.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    code = main(["check-config", str(path)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.err.splitlines(), path


def assert_one_line_per_problem(lines: list[str], path: Path, expected: list[str]) -> None:
    if len(expected) > 1:
        assert lines[-1] == f"tallybot: {len(expected)} problems"
        lines = lines[:-1]
    assert len(lines) == len(expected), "\n".join(lines)
    for line in lines:
        assert line.startswith(f"tallybot: {path}: "), line
        assert line.count(str(path)) == 1, f"the path twice: {line}"
    for problem in expected:
        matching = [line for line in lines if problem in line]
        assert len(matching) == 1, f"{problem!r} in:\n" + "\n".join(lines)


def test_at_least_thirty_broken_configurations() -> None:
    assert len(BROKEN) + len(ENV_CASES) >= 30
    assert len({name for name, *_ in BROKEN}) == len(BROKEN)


@pytest.mark.parametrize(("name", "text", "expected"), BROKEN, ids=[c[0] for c in BROKEN])
def test_a_broken_configuration_gets_one_clear_line_per_problem(
    name: str,
    text: str | bytes,
    expected: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines, path = check(tmp_path, name, text, capsys)
    assert code == 2
    assert_one_line_per_problem(lines, path, expected)


@pytest.mark.parametrize(
    ("name", "text", "env", "expected"), ENV_CASES, ids=[c[0] for c in ENV_CASES]
)
def test_what_the_machine_lacks_is_a_problem_too(
    name: str,
    text: str,
    env: dict[str, str],
    expected: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, lines, path = check(tmp_path, name, text, capsys)
    assert code == 2
    assert_one_line_per_problem(lines, path, expected)


def test_a_good_configuration_is_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = check(tmp_path, "ok", OK, capsys)
    assert code == 0


def test_the_shipped_example_passes_as_shipped(fresh_repo: Path) -> None:
    result = tallybot(fresh_repo, "check-config", "config/example.toml")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("config/example.toml: OK (3 counts; platforms: console;")


def test_the_compose_config_passes_with_the_secrets_compose_gives_it(
    fresh_repo: Path, tmp_path: Path
) -> None:
    compose = (fresh_repo / "docker-compose.yml").read_text()
    assert "./config/docker.toml:/app/config/tallybot.toml:ro" in compose
    env = clean_env(fresh_repo)
    for variable in ("DISCORD_TOKEN_FILE", "TALLYBOT_DB_PASSWORD_FILE"):
        assert f"{variable}: /run/secrets/" in compose
        secret = tmp_path / variable.lower()
        secret.write_text(TOKEN + "\n")
        env[variable] = str(secret)
    result = tallybot(fresh_repo, "check-config", "config/docker.toml", env=env)
    assert result.returncode == 0, result.stderr
    assert "platforms: discord; ops server on 0.0.0.0:8080" in result.stdout
    text = (fresh_repo / "config" / "docker.toml").read_text()
    assert "enabled = false" in text  # no console in a container
    bare = tallybot(fresh_repo, "check-config", "config/docker.toml")
    assert bare.returncode == 2
    assert "DISCORD_TOKEN is not set" in bare.stderr
    assert "Traceback" not in bare.stderr


def test_every_argument_has_help_and_there_is_a_version(fresh_repo: Path) -> None:
    from bot.runtime.cli import build_parser

    parser = build_parser()
    subparsers = [a for a in parser._actions if a.dest == "command"]
    (sub,) = subparsers
    for name, command in sub.choices.items():  # type: ignore[attr-defined]
        for action in command._actions:
            assert action.help, f"tallybot {name} {action.dest}: no help text"
    result = tallybot(fresh_repo, "--version")
    assert result.returncode == 0
    assert result.stdout.startswith("tallybot ")
    assert sys.version_info >= (3, 11)


def test_slack_http_mode_listens_on_loopback_unless_told(tmp_path: Path) -> None:
    import inspect

    from adapters.slack.settings import SlackSettings
    from bot.settings.loader import parse

    path = tmp_path / "t.toml"
    slack = parse({"slack": {"mode": "http"}}, path).settings("slack")
    assert slack is not None
    assert (slack.host, slack.port) == ("127.0.0.1", 3000)
    slack = parse({"slack": {"mode": "http", "host": "0.0.0.0", "port": 3100}}, path)
    assert (slack.settings("slack").host, slack.settings("slack").port) == ("0.0.0.0", 3100)
    assert inspect.signature(SlackSettings).parameters["host"].default == "127.0.0.1"
