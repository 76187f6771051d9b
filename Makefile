PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: chat test coverage lint bench clean

# setuptools says how it made an editable install with a Python warning (its InformationOnly
# note, "Editable installation ... Please be careful with folders in your working directory
# with the same name as your package"), and pip shows a local project's build warnings even
# with --quiet: a box of asterisks on the first `make chat`. That one note is filtered out;
# every other warning and error still shows.
EDITABLE_NOTE := ignore:Editable installation:UserWarning

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PYTHONWARNINGS='$(EDITABLE_NOTE)' $(BIN)/pip install --quiet -e '.[cli,test]'
	touch $(STAMP)

chat: $(STAMP)
	$(BIN)/toolnexus chat

# Byte-compiled up front: where PYTHONDONTWRITEBYTECODE is set, every `toolnexus` process a
# test starts would otherwise compile the project's sources again (~0.1 s each). pytest runs
# without it, so it keeps the test modules it rewrote for its assertion messages: a second
# run saves each worker ~8 s of CPU. Three workers on two cores: a third of the time a test
# waits on a process or a socket (measured: 191 s with two, 159 s with three, 159 s with
# four); workers steal what is left of each other's share.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 3 --dist worksteal

test: $(STAMP)
	$(BIN)/python -m compileall -q toolnexus toolnexus_cli tests
	$(PYTEST)

# The same suite with a coverage report, printed, never enforced; it counts the test
# processes, not the `toolnexus` processes they start. Tracing every line costs about as
# much CPU again as the tests themselves (measured: 80 s -> 135 s for tests/library), so
# `make test` goes without it.
coverage: $(STAMP)
	$(BIN)/python -m compileall -q toolnexus toolnexus_cli tests
	$(PYTEST) --cov=toolnexus --cov=toolnexus_cli --cov-report=term

# Every benchmark in bench/ (results.py is their shared helper), one after the other; each
# prints its table, the load it saw and its goals, and writes its section of
# bench/results.json. Peers install themselves into bench/.venvs on first use. A failing
# benchmark does not stop the others. Then tables.py prints every goal of issue 26 beside its
# ratio and the README's figures (bench/tables.md), saying whether the machine was quiet.
BENCHES = $(sort $(filter-out bench/results.py bench/tables.py,$(wildcard bench/*.py)))

bench: $(STAMP)
	@failed=; for b in $(BENCHES); do \
		echo "== $$b"; $(BIN)/python $$b || failed="$$failed $$b"; echo; \
	done; \
	echo "== bench/tables.py"; $(BIN)/python bench/tables.py; \
	if [ -n "$$failed" ]; then echo "bench failed:$$failed"; exit 1; fi; \
	echo "all benchmarks ran; figures in bench/results.json"

# The type checkers' settings are in pyproject.toml: mypy strict on toolnexus/ and
# toolnexus_cli/, and pyright's checks (basedpyright, as editors show them) on the same;
# basedpyright runs the node that came with it, offline.
lint: $(STAMP)
	$(BIN)/ruff check toolnexus toolnexus_cli tests bench
	$(BIN)/mypy
	$(BIN)/basedpyright
	$(BIN)/ruff format --check toolnexus toolnexus_cli tests bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .coverage
