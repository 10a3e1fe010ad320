# tallybot: `make demo` runs the console demo, `make test` runs the test suite,
# `make migration MSG=...` writes a new store revision.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench migration clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tallybot demo $(ARGS)

test: $(STAMP)
	$(BIN)/pytest $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench.fanout

# A new store revision from the difference between the revisions and bot/store/schema.py:
# make migration MSG="push receipts"   (see bot/store/migrations/__init__.py)
migration: $(STAMP)
	@test -n "$(MSG)" || { echo 'usage: make migration MSG="what changes"'; exit 2; }
	$(BIN)/python -m bot.store.migrations "$(MSG)"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
