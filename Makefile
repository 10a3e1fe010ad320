# tallybot: `make demo` runs the console demo, `make test` runs the test suite (two workers per
# CPU, pytest-xdist; `make test ARGS='-m "not slow"'` leaves out the end-to-end tests that start
# real processes or a browser), `make docs` builds the documentation site, `make migration MSG=...`
# writes a new store revision.
#
# The venv is made with the newest Python 3.11 or later that runs from PATH; choose another with
# `make PYTHON=python3.12 test` (or a full path). It installs the pinned versions of
# requirements-dev.lock; `make lock` regenerates both lock files from pyproject.toml
# (`make lock ARGS=--upgrade` moves every pin to the newest release).
PYTHON ?= $(shell for p in python3.15 python3.14 python3.13 python3.12 python3.11 python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo $$p; break; }; done)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LOCK_COMPILE = $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 \
	--generate-hashes --quiet --custom-compile-command "make lock" $(ARGS)

.PHONY: demo test lint docs lock bench migration clean

$(STAMP): pyproject.toml requirements-dev.lock
	@test -n "$(PYTHON)" || { echo "No Python 3.11 or newer found: install one, or name it: make PYTHON=/path/to/python3.x" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tallybot demo $(ARGS)

# --dist loadgroup: tests marked xdist_group("name") run on one worker, one after another.
test: $(STAMP)
	$(BIN)/pytest -n auto --dist loadgroup $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The documentation site (mkdocs.yml, pages under docs/, Material theme) into site/, which git
# ignores. --strict: a broken link or anchor, or a page left out of the navigation, fails it.
# tests/test_docs_reference.py (in `make test`) checks the reference against the code. No
# --quiet: it hides the warnings that --strict counts, and a broken link would pass.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The image installs requirements.lock (what tallybot needs to run); the venv and CI install
# requirements-dev.lock (that and the dev tools). uv resolves for every platform (--universal)
# and Python 3.11 and later; each pin carries its hashes.
lock: $(STAMP)
	$(LOCK_COMPILE) -o requirements.lock
	$(LOCK_COMPILE) --extra dev -o requirements-dev.lock

bench: $(STAMP)
	$(BIN)/python -m bench.fanout

# A new store revision from the difference between the revisions and bot/store/schema.py:
# make migration MSG="push receipts"   (see bot/store/migrations/__init__.py); PLUGIN=slack: its own
migration: $(STAMP)
	@test -n "$(MSG)" || { echo 'usage: make migration MSG="what changes"'; exit 2; }
	$(BIN)/python -m bot.store.migrations $(if $(PLUGIN),--plugin $(PLUGIN)) "$(MSG)"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
