# Two commands on a fresh machine: `make demo` (the explorer) and `make test`.
# Each creates .venv and installs requirements.txt the first time, then reuses them.
# `make test` also installs Debian's chromium for the real-browser test (as root, when missing),
# waiting up to 5 minutes for another process's apt/dpkg lock. If chromium still cannot be
# installed, it prints a banner "BROWSER TEST WILL BE SKIPPED" with the reason and runs every
# other test: a missing browser never fails the build.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | sha1sum | cut -c1-12)

.PHONY: setup system test test-fast bench demo

setup: $(STAMP)

$(STAMP):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@# umap-learn's import compiles pynndescent's numba kernels into their on-disk cache: once, here
	@# at install (as pip compiles bytecode), not on the first map a person draws (docs/benchmarks.md).
	$(PY) -c "import umap"
	@rm -f $(VENV)/.installed-* && touch $@

# The browser tests drive the system Chromium through Playwright (no browser is downloaded); the
# replicas test puts Debian's nginx in front of two explorers (scripts/serve-replicas).
# scripts/install-debian-package waits for the apt/dpkg locks (ANCHORDIV_APT_WAIT seconds, default
# 300) and never fails: without the package it warns loudly and the tests that need it skip themselves.
system:
	@sh scripts/install-debian-package "$${ANCHORDIV_CHROMIUM:-/usr/bin/chromium}" chromium \
		"the browser tests, tests/test_browser*.py"
	@sh scripts/install-debian-package /usr/sbin/nginx nginx-light "the replicas test, tests/test_replicas.py"

# pytest exits 5 when it collects no test; that is not a failure of the code under test.
# The JavaScript unit tests (tests/js/, Node's own test runner) run inside pytest
# (tests/test_player_source.py), once; without node they skip there, and this says so loudly.
test: setup system
	@command -v node >/dev/null 2>&1 || printf '\n%s\n##\n##  %s\n##  %s\n##\n%s\n\n' \
		"########################################################################" \
		"JS UNIT TESTS SKIPPED: node not found" \
		"Every other test still runs. Install Node.js (20 or later) to run tests/js/ too." \
		"########################################################################" >&2
	@$(PY) -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then exit 0; else exit $$rc; fi

test-fast: setup
	$(PY) -m pytest -m "not slow"

bench: setup
	$(PY) -m anchordiv bench

# The Streamlit explorer, headless: prints the URL to open. Plain `make demo`: the built-in world and
# encoder. `make demo ENCODER=open_clip:ViT-B-32 PRETRAINED=laion2b_s34b_b79k FOLDER=~/photos LABELS=x.csv`
# fetches the encoder, embeds the folder (with progress) and opens the explorer on it. Downloads are
# allowed here (a server for others, started by hand, allows none unless given --allow-download).
# MODEL= is ENCODER='s former name, still read.
ENCODER ?= $(MODEL)
PRETRAINED ?=
FOLDER ?=
LABELS ?=
demo: setup
	$(PY) -m anchordiv demo --allow-download $(if $(ENCODER),--encoder "$(ENCODER)") \
		$(if $(PRETRAINED),--pretrained "$(PRETRAINED)") $(if $(FOLDER),--folder "$(FOLDER)") \
		$(if $(LABELS),--labels "$(LABELS)")
