# Two commands on a fresh machine: `make test` (and, with the app, `make demo`).
# Each creates .venv and installs requirements.txt the first time, then reuses them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | sha1sum | cut -c1-12)

.PHONY: setup test test-fast bench

setup: $(STAMP)

$(STAMP):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@rm -f $(VENV)/.installed-* && touch $@

# pytest exits 5 when it collects no test; that is not a failure of the code under test.
test: setup
	@$(PY) -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then exit 0; else exit $$rc; fi

test-fast: setup
	$(PY) -m pytest -m "not slow"

bench: setup
	$(PY) -m anchordiv bench
