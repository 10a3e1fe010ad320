"""``python -m bot`` under cProfile, profiling only between two signals (for the benches).

    python -m bench.profiled run --config tallybot.toml      # TALLYBOT_BENCH_PROFILE=out.prof

SIGUSR1 starts profiling the main thread (the event loop), SIGUSR2 stops it and writes the
statistics to the file ``TALLYBOT_BENCH_PROFILE`` names (``python -m pstats out.prof``). A bench
sends them at its steady window's ends (``bench.polling --profile``), so the figures are the
steady state's, not the start's. Never part of the bot: a measuring tool only.
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
from types import FrameType

from bot.runtime.cli import main

PROFILE = cProfile.Profile()


def _start(signum: int, frame: FrameType | None) -> None:
    PROFILE.enable()


def _stop(signum: int, frame: FrameType | None) -> None:
    PROFILE.disable()
    PROFILE.dump_stats(os.environ["TALLYBOT_BENCH_PROFILE"])


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    sys.argv[0] = "tallybot"
    sys.exit(main())
