# The two set-up commands of the README: `make demo` and `make test`. Both work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: running tfretrace (the demo) needs TensorFlow and tfretrace only; the tests add the
# dev extra (pytest, ruff, mypy, selenium, notebooks: most of the download) on top of the same venv.
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test test-matrix lint-self chromium

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[tensorflow-cpu]"
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[tensorflow-cpu,dev]"
	touch $(DEV_STAMP)

# Runs an unmodified example training script under the monitor and prints the report, then the
# checked fix plan and the commands that verify and apply it. It runs a copy in .demo/ (ignored by
# git): following the demo's last line edits that copy, never the tracked example.
demo: $(STAMP)
	@rm -rf .demo && mkdir -p .demo && cp examples/demo_train.py .demo/demo_train.py
	$(BIN)/tfretrace run --fix-plan --save demo-session.json .demo/demo_train.py

# The browser test needs a real Chromium; Debian's package provides it and its driver. Installing
# it changes system packages (on a slim image: about a hundred new packages, and upgrades of some
# installed ones that the new ones need), so apt's own dry run (-s) is shown first, listing every
# package it would upgrade and its one-line summary; then the install runs with its output shown.
# NO_APT=1 leaves the system alone (the browser test then fails, saying Chromium is missing).
# A browser installed into the project instead would need a download from Google's servers
# (selenium-manager, Playwright, Puppeteer), which this project cannot assume is reachable.
APT_PACKAGES := chromium chromium-driver

chromium:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ -n "$(NO_APT)" ]; then \
	  echo "make: NO_APT is set: not installing Chromium; the browser test (tests/test_browser.py) will fail"; \
	else \
	  echo "make: the browser test needs Chromium: installing Debian's $(APT_PACKAGES) with apt-get"; \
	  echo "make: (this changes system packages and needs root and the network; NO_APT=1 skips it)"; \
	  { apt-get update -qq \
	    && plan="$$(apt-get install -s $(APT_PACKAGES))" \
	    && echo "make: apt-get's dry run says the install will change:" \
	    && printf '%s\n' "$$plan" | sed -n 's/^Inst \([^ ]*\) \[\([^]]*\)\] (\([^ ]*\).*/make:   upgrade \1 \2 -> \3/p' \
	    && printf '%s\n' "$$plan" | grep -E '^[0-9]+ upgraded' | sed 's/^/make:   /' \
	    && DEBIAN_FRONTEND=noninteractive apt-get install -y $(APT_PACKAGES); } \
	    || echo "make: warning: could not install chromium; the browser test will fail"; \
	fi

# tfretrace's own linter over tfretrace's own sources (examples/ and bench/heldout/, real programs
# nobody here wrote, hold retracing mistakes on purpose).
lint-self: $(STAMP)
	$(BIN)/tfretrace lint src/tfretrace bench tools --exclude 'bench/heldout/*'

test: $(DEV_STAMP) chromium
	$(BIN)/ruff check src tests bench examples tools
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2

# Not a set-up command: one environment per supported TensorFlow/Keras under .matrix/ (several GB,
# minutes per environment on first use), the tests and examples in each, and a table of results.
# ROWS=tf2.15-keras2,tf2.21-tfkeras picks rows; TESTS="ROW=FILE,FILE ..." runs only those test files
# in a row (tools/matrix.py --help).
test-matrix: $(STAMP)
	$(BIN)/python tools/matrix.py $(if $(ROWS),--rows $(ROWS),) $(foreach t,$(TESTS),--tests $(t))
