"""The demo shows the Bessemer count unfolding: right margins, the clinch once, the final."""

from __future__ import annotations

import io
from datetime import UTC
from pathlib import Path
from zoneinfo import ZoneInfo

from adapters.console.adapter import ConsoleAdapter
from bot.runtime.cli import demo_config_path, main, play, replay_config
from bot.settings import loader as config_mod
from bot.testing.clock import FakeClock


async def test_demo_replays_bessemer(tmp_path: Path) -> None:
    clock = FakeClock()

    out = io.StringIO()
    cfg = replay_config(config_mod.load(demo_config_path()), tmp_path, speed=1.0)
    console = ConsoleAdapter(out=out, rich=False, save_dir=tmp_path / "charts", zone=UTC)
    await play(cfg, console, clock=clock, sleep=clock.sleep)
    text = out.getvalue()
    assert "Watch it in a browser too: http://127.0.0.1:" in text
    assert "/c/bessemer-2021\n" in text
    # The times the count happened (the recorded ones), not the clock's (12:00 on 8 April).
    assert "· as of 8 Apr 2021 19:00 UTC · update #1" in text
    assert "· as of 8 Apr 2021 23:10 UTC · update #6" in text  # the overnight pause
    assert "Final tally · source: NLRB count (replay) · as of 9 Apr 2021 18:40 UTC" in text
    assert "Count paused: No union leads by 637" in text
    assert "1,563 of 3,215 ballots counted (48.6%)" in text
    assert "A side needs 1,608 to clinch." in text
    assert text.count("No union has clinched a majority (unofficial)") == 1
    assert text.index("clinched a majority") > text.index("Count resumed")
    assert "Final tally: No union wins, 1,798 to 738" in text
    assert "The 505 challenged ballots cannot change the result." in text
    assert text.count(" · update #") == 12  # every change, once (by its footer)
    # 3,215 received all night, 3,117 in the NLRB's tally: said, as a correction (issue 24)
    assert "Ballots received corrected from 3,215 to 3,117." in text
    assert "Turnout: 53.0% of 5,876 eligible voters." in text
    (chart,) = (tmp_path / "charts").iterdir()  # the final message's chart
    assert f"Saved: {chart}" in text
    assert text.index("Final tally") < text.index(f"Saved: {chart}")
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_check_config_names_file_key_and_problem(tmp_path: Path, capsys: object) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[counts]]\nid = "x"\ntitle = "X"\nrule = "majority"\nintervall = 5\n'
        'choices = [{id="a"},{id="b"}]\n'
    )
    assert main(["check-config", str(bad)]) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert f"{bad}: counts[0].intervall: unknown key (did you mean 'interval'?)" in err


def test_check_config_counts_in_the_singular(tmp_path: Path, capsys: object) -> None:
    one = tmp_path / "one.toml"
    one.write_text(
        "[console]\nenabled = true\n"
        '[[counts]]\nid = "x"\ntitle = "X"\nchoices = [{id="a"},{id="b"}]\n'
    )
    assert main(["check-config", str(one)]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out == f"{one}: OK (1 count; platforms: console)\n"


async def test_the_demo_speaks_the_operators_time_zone(tmp_path: Path) -> None:
    clock = FakeClock()

    out = io.StringIO()
    cfg = replay_config(config_mod.load(demo_config_path()), tmp_path, speed=1.0)
    zone = ZoneInfo("America/Chicago")
    console = ConsoleAdapter(out=out, rich=False, save_dir=tmp_path / "charts", zone=zone)
    await play(cfg, console, clock=clock, sleep=clock.sleep)
    assert "· as of 8 Apr 2021 14:00 CDT · update #1" in out.getvalue()
    assert "UTC" not in out.getvalue()
