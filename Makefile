PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: chat test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

chat: $(STAMP)
	$(BIN)/toolnexus chat

test: $(STAMP)
	$(BIN)/ruff check toolnexus toolnexus_cli tests bench
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check toolnexus toolnexus_cli tests bench

clean:
	rm -rf $(VENV) .pytest_cache
