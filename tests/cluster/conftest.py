"""The cluster tests start real ``tallybot run`` processes (``start_run``: killed after)."""

from tests.firsthour.conftest import start_run

__all__ = ["start_run"]
