# Two commands for a fresh machine:
#   make run    install everything and serve the test page on http://127.0.0.1:8765/
#   make test   install everything the tests need (Debian's chromium too) and run them
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8765
PYTEST_ARGS ?=
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test bench assets chromium

run: $(VENV)/.installed assets
	$(BIN)/python serve.py --host $(HOST) --port $(PORT)

test: $(VENV)/.installed assets chromium
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.installed assets chromium
	$(BIN)/python bench/run.py

# The virtual environment, rebuilt when the pinned dependencies change.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

# Pyodide, its wheels and the WebMCP polyfill, pinned and sha256-checked (static/assets.lock.json).
assets:
	$(PYTHON) static/fetch.py

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }
