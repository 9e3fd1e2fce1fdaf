# One command to run, one to test, on a fresh machine: each builds .venv from pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install run test lint migrate openapi bench

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[server,dev]'
	touch $@

install: $(BIN)/.installed

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

migrate: install
	$(BIN)/python -m service migrate

run: migrate
	$(BIN)/python -m service serve

openapi: install
	$(BIN)/python -m service openapi > openapi/openapi.json

bench: install
	$(BIN)/python bench/framework.py
	$(BIN)/python bench/inprocess.py
	$(BIN)/python bench/cli.py
	$(BIN)/python bench/run.py
	$(BIN)/python bench/middleware.py
	$(BIN)/python bench/matrix_load.py
	$(BIN)/python bench/instructions.py
	$(BIN)/python bench/startup_log.py
	$(BIN)/python bench/traffic.py
