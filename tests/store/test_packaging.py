"""An installed tallybot (the wheel, as the Docker image installs it) migrates its store by
itself: the revisions and Alembic's environment ship inside the package."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE_PACKAGES = Path(sys.modules["sqlalchemy"].__file__ or "").parents[1]

pytestmark = pytest.mark.slow  # builds and installs the wheel

MIGRATE = """
import asyncio, json, sys
import bot
from bot.store import Database, migrations

async def main() -> None:
    async with Database(sys.argv[1]) as db, db.connect() as conn:
        print(json.dumps({"bot": bot.__file__, "at": await migrations.current_version(conn),
                          "latest": migrations.latest()}))

asyncio.run(main())
"""


async def run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=50)
    assert proc.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.timeout(60)
async def test_the_installed_wheel_migrates_a_new_store(tmp_path: Path) -> None:
    src = tmp_path / "src"  # what the Dockerfile copies in, built away from this checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in ("bot", "adapters"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    await run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--no-index", "--wheel-dir", str(dist), str(src),
        cwd=tmp_path,
    )  # fmt: skip
    [wheel] = dist.glob("tallybot-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(site)
    assert {
        "bot/store/migrations/env.py",
        "bot/store/migrations/script.py.mako",
        "bot/store/migrations/versions/v0001_create_tables.py",
    } <= names

    # -S: not this checkout's editable install, only the unpacked wheel and the dependencies.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SITE_PACKAGES)])}
    store = f"sqlite+aiosqlite:///{tmp_path / 'var' / 'tallybot.sqlite3'}"
    out = await run(sys.executable, "-S", "-c", MIGRATE, store, cwd=tmp_path, env=env)
    got = json.loads(out)
    assert Path(got["bot"]).is_relative_to(site)
    assert got["at"] == got["latest"]
    assert int(got["latest"]) >= 2
