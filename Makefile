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

bench: $(STAMP)
	$(BIN)/python bench/stream_throughput.py
	$(BIN)/python bench/render.py
	@if [ -f bench/store.py ]; then $(BIN)/python bench/store.py; fi
	@if [ -f bench/startup.py ]; then $(BIN)/python bench/startup.py; fi

lint: $(STAMP)
	$(BIN)/ruff check toolnexus toolnexus_cli tests bench

clean:
	rm -rf $(VENV) .pytest_cache
