# Two commands set up and run everything on a fresh machine:
#   make demo   creates .venv, installs bcc, runs the penguins example offline
#   make test   creates .venv, installs with dev extras, runs ruff and pytest
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev

.PHONY: demo test check lint install venv bytecode clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# An editable install is imported from the source tree, where nothing byte-compiles it when
# PYTHONDONTWRITEBYTECODE is set (as on our CI machines): every bcc start would compile the
# package again (~60 ms). compileall writes the caches anyway; only changed files are redone.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q notebook_bcc

demo: bytecode
	$(BIN)/bcc run examples/penguins/problem.md examples/penguins/penguins.csv

lint: $(STAMP)
	$(BIN)/ruff check notebook_bcc tests benchmarks examples
	$(BIN)/ruff format --check notebook_bcc tests benchmarks examples

# everything: lint, unit, workflow logic on scripted kernels, real kernels, CLI, faults, browser
test: lint bytecode
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist worksteal --durations=15

# while developing (a few minutes): lint, the unit tests and the workflow's logic on scripted
# kernels (tests marked `check`)
check: lint bytecode
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist worksteal -m check --durations=10

clean:
	rm -rf $(VENV) build dist *.egg-info
