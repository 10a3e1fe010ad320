"""The container without a Docker engine: the image's own entrypoint command, its environment
and working directory taken from the Dockerfile, run with a read-only HOME and no standard
input, serves /readyz green and stops on SIGTERM; the font cache the image builds is where
matplotlib looks; the image and CI install the pinned versions of the lock files."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.firsthour.conftest import (
    BIN,
    STOP_WITHIN,
    Running,
    clean_env,
    example_for_tests,
    get_json,
    run_process,
)


def dockerfile(repo: Path) -> str:
    return (repo / "Dockerfile").read_text().replace("\\\n", " ")


def run_stage(repo: Path) -> str:
    """The Dockerfile's last stage (the image that runs)."""
    return re.split(r"^FROM ", dockerfile(repo), flags=re.MULTILINE)[-1]


def image_env(repo: Path, app: Path) -> dict[str, str]:
    """The ENV of the run stage, with the image's /app at ``app`` and its venv at ours."""
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", run_stage(repo), re.MULTILINE):
        for name, value in re.findall(r'(\w+)=("[^"]*"|\S+)', line):
            env[name] = value.strip('"').replace("/app/", f"{app}/")
    env["PATH"] = env["PATH"].replace("/opt/tallybot/bin", str(BIN)).replace("$PATH", "/usr/bin")
    return env


def image_cmd(repo: Path) -> list[str]:
    match = re.search(r"^CMD (\[.*\])$", run_stage(repo), re.MULTILINE)
    assert match is not None, "no CMD [...] in the Dockerfile"
    command: list[str] = json.loads(match.group(1))
    return command


def image_app(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The image's /app (WORKDIR) with the configuration mounted, and a read-only HOME."""
    assert re.search(r"^WORKDIR /app$", run_stage(repo), re.MULTILINE)
    app = tmp_path / "app"
    config = example_for_tests(repo, app / "config")
    assert config == app / "config" / "tallybot.toml"
    (app / "var").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    return app, home


def test_the_image_command_serves_readyz_with_a_read_only_home_and_no_stdin(
    fresh_repo: Path, tmp_path: Path, start_run: list[Running]
) -> None:
    app, home = image_app(fresh_repo, tmp_path)
    env = {**clean_env(fresh_repo), **image_env(fresh_repo, app), "HOME": str(home)}
    assert env["TALLYBOT_CONFIG"] == f"{app}/config/tallybot.toml"
    command = image_cmd(fresh_repo)
    assert command == ["python", "-m", "bot", "run"]
    bot = run_process([str(BIN / command[0]), *command[1:]], cwd=app, env=env, started=start_run)
    status, body = get_json(f"{bot.url()}/readyz")
    assert (status, body["status"]) == (200, "ready"), body
    assert bot.stop(signal.SIGTERM) < STOP_WITHIN
    assert bot.proc.returncode == 0
    log = bot.log()
    assert "console adapter off: standard input is not a terminal" in log
    assert "Traceback" not in log
    assert "writable" not in log  # no matplotlib complaint about its config dir
    assert list(home.iterdir()) == []  # nothing written to HOME
    assert (app / "var" / "tallybot.sqlite3").exists()  # the store is on the volume


def test_the_font_cache_built_in_the_image_is_where_matplotlib_looks(
    fresh_repo: Path, tmp_path: Path
) -> None:
    app, home = image_app(fresh_repo, tmp_path)
    env = {**clean_env(fresh_repo), **image_env(fresh_repo, app), "HOME": str(home)}
    stage = run_stage(fresh_repo)
    (build,) = [c for c in re.findall(r"^RUN (.+)$", stage, re.MULTILINE) if "matplotlib" in c]
    assert stage.index(build) < stage.index("\nVOLUME [")  # kept in the image, under the volume
    subprocess.run(build, shell=True, cwd=app, env=env, check=True, timeout=120)
    cache = Path(env["MPLCONFIGDIR"])
    assert cache.is_relative_to(app / "var")
    assert list(cache.glob("fontlist-*.json"))
    probe = "import matplotlib; print(matplotlib.get_cachedir())"
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == str(cache)
    assert result.stderr == ""  # no warning, no rebuild message
    assert list(home.iterdir()) == []


def pins(lock: Path) -> dict[str, str]:
    found = {}
    for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock.read_text(), re.MULTILINE):
        found[re.sub(r"[-_.]+", "-", name).lower()] = version
    return found


def requirement_names(specs: list[str]) -> set[str]:
    return {
        re.sub(r"[-_.]+", "-", re.split(r"[<>=!~ ;\[]", s, maxsplit=1)[0]).lower() for s in specs
    }


def test_the_image_and_ci_install_the_lock_files(fresh_repo: Path) -> None:
    project = tomllib.loads((fresh_repo / "pyproject.toml").read_text())["project"]
    runtime = pins(fresh_repo / "requirements.lock")
    dev = pins(fresh_repo / "requirements-dev.lock")
    assert requirement_names(project["dependencies"]) <= set(runtime)
    assert requirement_names(project["optional-dependencies"]["dev"]) <= set(dev)
    assert {k: v for k, v in dev.items() if k in runtime} == runtime  # the same versions
    for lock in ("requirements.lock", "requirements-dev.lock"):
        text = (fresh_repo / lock).read_text()
        assert text.startswith("# This file was autogenerated by uv")
        assert "make lock" in text.splitlines()[1]
        for block in re.split(r"\n(?=[A-Za-z0-9])", text)[1:]:
            assert "--hash=sha256:" in block, block  # every pin carries its hashes
    docker = dockerfile(fresh_repo)
    assert "pip install --require-hashes -r requirements.lock" in docker
    makefile = (fresh_repo / "Makefile").read_text()
    assert "pip install --quiet --require-hashes -r requirements-dev.lock" in makefile
    ci = (fresh_repo / ".ci" / "run").read_text()
    assert "make lint" in ci  # both install from the lock (the Makefile's venv)
    assert "make test" in ci


def test_the_makefile_takes_the_newest_python_that_runs(fresh_repo: Path, tmp_path: Path) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for version, works in (("3.13", False), ("3.12", True), ("3.11", True)):
        script = fake_bin / f"python{version}"
        body = f'exec {sys.executable} "$@"' if works else "exit 1"
        script.write_text("#!/bin/sh\n" + body + "\n")
        script.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:/usr/bin:/bin"}
    env.pop("PYTHON", None)
    make = subprocess.run(
        ["make", "-n", "test"], cwd=fresh_repo, env=env, capture_output=True, text=True, check=True
    )
    assert "python3.12 -m venv .venv" in make.stdout  # 3.13 is there but does not run
    chosen = subprocess.run(
        ["make", "-n", "test", "PYTHON=python3.11"],
        cwd=fresh_repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "python3.11 -m venv .venv" in chosen.stdout
