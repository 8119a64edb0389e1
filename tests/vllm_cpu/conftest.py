"""Shared by the vLLM-on-CPU tests (``make test-vllm``; skipped where vLLM is not installed).

``model_dir``: the tiny random Llama re-shaped to head_dim 64 (vLLM's CPU attention has no
kernel for the packaged tiny model's head_dim 16), same tokenizer, fixed seed, float32;
built once per session and used by every engine of these tests (in-process ``vllm.LLM``,
``spade eval`` in a subprocess, ``trl vllm-serve``, TRL's colocated engine).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    pytest.importorskip("vllm")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from spade_envs.agents.models import model_path

    src = str(model_path("tiny-random"))
    cfg = AutoConfig.from_pretrained(src)
    cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim = 128, 2, 1, 64
    cfg.intermediate_size = 256
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    out = tmp_path_factory.mktemp("tiny-llama-hd64")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return out
