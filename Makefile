# The two set-up commands of the README: `make demo` and `make test`. Both work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint-self chromium

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[tensorflow-cpu,dev]"
	touch $(STAMP)

# Runs an unmodified example training script under the monitor and prints the report.
demo: $(STAMP)
	$(BIN)/tfretrace run --save demo-session.json examples/demo_train.py

# The browser test needs a real Chromium; Debian's package provides it and its driver.
chromium:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || \
	  { (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	    || echo "warning: could not install chromium; the browser test will fail"; }

test: $(STAMP) chromium
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q
