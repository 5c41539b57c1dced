# Two commands on a fresh machine: `make demo` (the explorer) and `make test`.
# Each creates .venv and installs requirements.txt the first time, then reuses them.
# `make test` also installs Debian's chromium for the real-browser test (as root, when missing).
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
	@rm -f $(VENV)/.installed-* && touch $@

# The browser test drives the system Chromium through Playwright; no browser is downloaded.
system:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed here: the browser test will be skipped"; fi; \
	fi

# pytest exits 5 when it collects no test; that is not a failure of the code under test.
test: setup system
	@$(PY) -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then exit 0; else exit $$rc; fi

test-fast: setup
	$(PY) -m pytest -m "not slow"

bench: setup
	$(PY) -m anchordiv bench

# The Streamlit explorer on the built-in world and model (CPU). Headless: prints the URL to open.
demo: setup
	$(PY) -m streamlit run app/streamlit_app.py --server.headless=true --browser.gatherUsageStats=false
