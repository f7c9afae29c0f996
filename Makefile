# Two commands for a fresh machine:
#   make run    install everything and serve the test page on http://127.0.0.1:8765/
#   make test   install everything the tests need (Debian's chromium and redis-server too), run the checks,
#               then the tests
# And: make check (lint, format, types, JS), make fix (apply the automatic fixes), make bench,
# make tck TCK=path/to/a2a-tck (the A2A TCK against the router and against the plain a2a-sdk).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8765
PYTEST_ARGS ?=
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test check fix bench tck assets chromium redis node

run: $(VENV)/.installed assets
	$(BIN)/python serve.py --host $(HOST) --port $(PORT)

test: check assets chromium redis
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Python: ruff (lint, format) and mypy --strict (pyproject.toml); JavaScript: Biome (biome.json).
check: $(VENV)/.installed node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	node_modules/.bin/biome ci

fix: $(VENV)/.installed node_modules/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	node_modules/.bin/biome check --write

bench: $(VENV)/.installed assets chromium redis
	$(BIN)/python bench/run.py

# The A2A TCK's mandatory tests against /agents/echo and against the plain a2a-sdk server, same run.
# TCK: a checkout (or bare git directory) of github.com/a2aproject/a2a-tck; it stays outside the tree.
TCK ?= /work/.mirror/a2aproject+a2a-tck/repo
tck: $(VENV)/.installed
	$(BIN)/python tests/tck/run.py --tck $(TCK)

# The virtual environment, rebuilt when the pinned dependencies change.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

# Pyodide, its wheels and the WebMCP polyfill, pinned and sha256-checked (static/assets.lock.json),
# then the page's fast start-up built from them (static/boot/: a memory snapshot and bytecode).
BOOT_INPUTS := static/assets.lock.json static/fetching/boot.mjs web/js/runtime.js $(shell find py/webmcp_a2a -name '*.py')
assets: | node
	$(PYTHON) static/fetch.py
	@$(MAKE) --no-print-directory static/boot/manifest.json

static/boot/manifest.json: $(BOOT_INPUTS)
	node static/fetching/boot.mjs

# The JavaScript checker, pinned and integrity-checked by package-lock.json. Not `npm ci`: the registry
# here serves Biome's Linux binaries only, so the lock cannot list the other platforms' and ci refuses it.
node_modules/.installed: package-lock.json | node
	npm install --no-audit --no-fund --loglevel=error
	touch $@

node:
	@command -v npm >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nodejs npm; }

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

# Several routers share one Redis (--redis); the tests start their own redis-server on a free port.
redis:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server; }
