"""Shared fixtures. The store ones give each test a fresh database on every supported dialect."""

from __future__ import annotations

import asyncio
import compileall
import gc
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

import bot.runtime.app
from bot.charts.process import ChartProcess
from bot.store import Database
from bot.store.engine import quote_identifier
from tests import hangs
from tests.store_template import StoreTemplates

PG_URL = os.environ.get("TALLYBOT_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
PG_UNREACHABLE = (
    "PostgreSQL not reachable at 127.0.0.1:5432 (start it or set TALLYBOT_PG_URL); "
    "set TALLYBOT_REQUIRE_PG=1 to make this a failure"
)
_pg_check: dict[str, str | None] = {}
"""``{"error": None}`` once PostgreSQL answered, ``{"error": why}`` if it did not (checked once)."""


SLOW_FIXTURES = frozenset({"start_run", "browser", "fresh_repo"})
"""A test using one of these starts real processes or a browser: it is ``slow`` whether it says
so or not (``pytest -m "not slow"`` leaves it out)."""


TELEGRAM_DIRS = ("tests/adapters/telegram/", "tests/fakes/telegram_tests/")
"""Every test under these drives aiogram (the adapter, or the real client against the fake)."""
TELEGRAM_GROUP = pytest.mark.xdist_group("telegram")
"""Where every test that uses aiogram at run time runs (``--dist loadgroup``: on one worker).
Importing aiogram costs a process ~5.5 CPU-s (pydantic builds ~665 model schemas), and the first
use of its methods about 4 s more; every worker collects every test module, so no test module
imports aiogram when collected (``test_collection_imports_no_aiogram``), and the tests that use it
share one worker: one worker pays, not each of them (a collection of the suite took 12.5
CPU-s, 6.5 without aiogram). A test outside these folders that uses the Telegram fake or adapter
without a Telegram ``rig`` carries ``xdist_group("telegram")`` itself (test_doctor.py and
test_extra_verb.py in tests/adapters)."""
AIOGRAM_AT_COLLECTION = pytest.StashKey[bool]()
"""Whether aiogram was imported when this process had collected the tests."""


def _uses_telegram(item: pytest.Item) -> bool:
    """A test under the Telegram folders, or one given the Telegram rig (the contract's ``rig``
    fixture, parametrized by platform name: ``tests/adapters/contract.py``, test_rehearse)."""
    root = item.config.rootpath
    where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
    callspec = getattr(item, "callspec", None)
    rig = callspec.params.get("rig") if callspec is not None else None
    return where.startswith(TELEGRAM_DIRS) or rig == "telegram"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: before pytest-xdist's own hook (xdist/remote.py, a plain hookimpl), which reads
    # each item's xdist_group markers into the "@group" suffix of its node id under --dist
    # loadgroup; the controller's scheduler (xdist/scheduler/loadgroup.py) groups by that suffix.
    # (With pytest 9.2 that hook's suffix does not take: _group_suffix puts it.)
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if _uses_telegram(item) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(TELEGRAM_GROUP)
    # The slow tests first (in their order), then the rest: the workers take tests in this
    # order (after the groups, which xdist sends first, the largest first), so that the tests
    # of 20 to 45 s start while there is plenty left to share and the run ends on tests of a
    # second or less (measured: the four workers' last tests ended within 2 s of each other).
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    _group_suffix(config, items)


def _group_suffix(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, each item's xdist_group names as the ``@group`` suffix of its
    node id, which the controller's scheduler groups by (xdist/scheduler/loadgroup.py). xdist's
    own hook (xdist/remote.py) sets ``item._nodeid``, which pytest 9.2 no longer reads (the node id
    is ``item._id``): without this, no group held and the tests of a group ran on every worker
    (pytest-xdist issue #1386; its open fix, PR #1388, sets the structured id the same way)."""
    if not getattr(config.option, "loadgroup", False):  # set on a worker of --dist loadgroup
        return
    for item in items:
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                 for m in item.iter_markers("xdist_group")}  # fmt: skip
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix):
            item._id = type(item.id).parse(item.nodeid + suffix)


WORKERS_PER_CPU = 2
"""``-n auto`` (``make test``): workers per CPU this process may use. Many tests wait more than
they compute (on real processes they started, a browser, the store, a fake's timeout), so one
worker per CPU left about 40% of the CPUs idle: on 2 CPUs, 387 s with 2 workers, 263 s with 4
(and 258 s with 6: the CPUs were full)."""
MOST_WORKERS = 8
"""Beyond this many workers, one per CPU: more CPUs leave less idle, and every worker holds its
own PostgreSQL connections (the server's default limit is 100)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    cpus = len(os.sched_getaffinity(0))
    return max(cpus, min(WORKERS_PER_CPU * cpus, MOST_WORKERS))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything collection made (the test modules, the libraries they import, the tests) is
    kept for the whole run: frozen out of the garbage collector's reach, a full collection
    looks only at what the tests make. Each full collection walked the whole heap of a test
    process (0.19 s of CPU each; 14.4 of contract.py's 39 s, 2.3 s frozen), and the delivery
    worker starts one after every fan-out (``bot.base.memory.give_back``)."""
    session.config.stash[AIOGRAM_AT_COLLECTION] = "aiogram" in sys.modules
    _freeze()


FREEZE_AFTER_MODULES = 50
"""A test that imported at least this many modules (aiogram, matplotlib, jinja2 the first time a
test process uses them) leaves them frozen too, as collection leaves its own."""
_frozen_modules = [0]
"""How many modules this process had imported when it last froze its heap."""


def _freeze() -> None:
    gc.collect()
    gc.freeze()
    _frozen_modules[0] = len(sys.modules)


@pytest.fixture(autouse=True)
def _freeze_new_imports() -> Iterator[None]:
    """What a test imported as libraries, frozen out of the collector's reach once it is over:
    importing aiogram alone leaves about 150,000 objects, which every later full collection
    would walk again (the delivery worker's ``give_back`` after each fan-out: 150 ms each in the
    Telegram tests' process, 3.2 of their 26 CPU-s)."""
    yield
    if len(sys.modules) - _frozen_modules[0] >= FREEZE_AFTER_MODULES:
        _freeze()


@pytest.hookimpl(wrapper=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: object) -> Iterator[object]:
    """When pytest-timeout's alarm goes off, write what the test was waiting for first (every
    asyncio task with its stack, every thread's: ``tests.hangs``) into its captured stderr,
    shown with the failure; then pytest-timeout's handler fails the test as before."""
    result = yield
    timed_out = signal.getsignal(signal.SIGALRM)
    if callable(timed_out):  # the signal method (the thread method os._exit()s: no loop to read)

        def dump_then_fail(signum: int, frame: object) -> None:
            sys.stderr.write(f"\n===== {item.nodeid} timed out: what it waited for =====\n")
            sys.stderr.write(hangs.report())
            sys.stderr.flush()
            timed_out(signum, frame)

        signal.signal(signal.SIGALRM, dump_then_fail)
    return result


ROOT = Path(__file__).resolve().parents[1]

sys.dont_write_bytecode = False
"""The test modules (as pytest rewrites their asserts) and everything else a test process imports
are cached as bytecode even where ``PYTHONDONTWRITEBYTECODE`` is set: each of the two xdist
workers collects the whole suite, and compiling it from source again every run cost each about
7 s of CPU (19 -> 12 s a collection)."""


@pytest.fixture(scope="session", autouse=True)
def _compiled_bytecode() -> None:
    """The bot's own packages compiled once per run, for the ``tallybot run`` processes the
    tests start: where ``PYTHONDONTWRITEBYTECODE`` is set, each of them would otherwise compile
    all of ``bot/`` and ``adapters/`` from source again (about 0.2 s of CPU a start)."""
    for package in ("bot", "adapters"):
        compileall.compile_dir(ROOT / package, quiet=1)


@pytest.fixture(scope="session", autouse=True)
def chart_process() -> Iterator[ChartProcess]:
    """Where the charts of the whole run are drawn: the tests that ask for it, and every App
    not given its own (``App(chart_process=)``): in a bot each app starts processes of its own,
    which costs a second or two of CPU an app (matplotlib's import), paid once per run here.
    The run holds it, so an app that ends leaves it running for the next."""
    process = ChartProcess()
    process.hold()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bot.runtime.app, "ChartProcess", lambda: process)
        yield process
    asyncio.run(process.release())


@pytest.fixture(scope="session")
def _store_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreTemplates]:
    """A new store opened in a test is a copy of one migrated store (see tests.store_template)."""
    templates = StoreTemplates(tmp_path_factory.mktemp("store-template"))
    real_aopen = Database.aopen

    async def aopen(self: Database) -> None:
        await templates.seed(self._url, self._schema, self._plugins)
        await real_aopen(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Database, "aopen", aopen)
        yield templates


@pytest.fixture(autouse=True)
def _fresh_store(
    request: pytest.FixtureRequest, _store_templates: StoreTemplates
) -> Iterator[None]:
    """A test marked ``fresh_store`` migrates its stores from nothing (no template copy)."""
    _store_templates.enabled = request.node.get_closest_marker("fresh_store") is None
    yield
    _store_templates.enabled = True


async def _pg_execute(url: str, sql: str) -> None:
    engine = create_async_engine(url, poolclass=NullPool, connect_args={"timeout": 5})
    try:
        async with engine.begin() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


async def _require_postgres() -> None:
    """Skip the test when PostgreSQL is unreachable, or fail it if TALLYBOT_REQUIRE_PG=1."""
    if "error" not in _pg_check:
        try:
            await _pg_execute(PG_URL, "SELECT 1")
            _pg_check["error"] = None
        except (OSError, sa_exc.DBAPIError) as exc:
            _pg_check["error"] = f"{type(exc).__name__}: {exc}"
    error = _pg_check["error"]
    if error is not None:
        if os.environ.get("TALLYBOT_REQUIRE_PG") == "1":
            pytest.fail(f"{PG_UNREACHABLE}\n{error}")
        pytest.skip(PG_UNREACHABLE)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL: a SQLite file under ``tmp_path``, or the test PostgreSQL database.

    On PostgreSQL, pair it with ``store_schema`` so the test gets tables of its own.
    """
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store' / 'tallybot.sqlite3'}"
    await _require_postgres()
    return PG_URL


@pytest.fixture
async def store_schema(store_url: str) -> AsyncIterator[str | None]:
    """A fresh, uniquely named PostgreSQL schema for this test (dropped, cascade, afterwards);
    ``None`` on SQLite. ``Database(store_url, schema=store_schema)`` creates it."""
    if not store_url.startswith("postgresql"):
        yield None
        return
    name = f"test_{uuid.uuid4().hex[:16]}"
    try:
        yield name
    finally:
        await _pg_execute(store_url, f"DROP SCHEMA IF EXISTS {quote_identifier(name)} CASCADE")


@pytest.fixture
async def db(store_url: str, store_schema: str | None) -> AsyncIterator[Database]:
    """An opened (migrated) store on ``store_url``, closed after the test."""
    async with Database(store_url, schema=store_schema) as opened:
        yield opened
