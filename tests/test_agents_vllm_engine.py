"""The vLLM backend's engine settings (agents/backend_vllm.py), with a stand-in ``vllm``
module that records what the engine is built with and asked: prefix caching on, and
``max_num_seqs`` sized to the batch played, which goes to the engine in one call."""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

import pytest

from spade_envs.agents.backend_vllm import VLLMBackend
from vllm_stubs import StubTokenizer


class _LLM:
    built: list[dict] = []

    def __init__(self, **kwargs):
        _LLM.built.append(kwargs)
        self.calls = []

    def get_tokenizer(self):
        return StubTokenizer()

    def generate(self, prompts, params, use_tqdm=False):
        self.calls.append(len(prompts))
        done = SimpleNamespace(token_ids=[7, 3], logprobs=[{7: SimpleNamespace(logprob=-0.5)},
                                                           {3: SimpleNamespace(logprob=-0.1)}], finish_reason="stop")
        return [SimpleNamespace(outputs=[done]) for _ in prompts]


@pytest.fixture
def fake_vllm(monkeypatch, tmp_path):
    module = ModuleType("vllm")
    module.LLM = _LLM
    module.SamplingParams = lambda **kw: SimpleNamespace(**kw)
    monkeypatch.setitem(sys.modules, "vllm", module)
    _LLM.built = []
    return tmp_path


def test_engine_has_prefix_caching_and_max_num_seqs_of_the_played_batch(fake_vllm):
    backend = VLLMBackend(str(fake_vllm), batch_size=32)
    kwargs = _LLM.built[-1]
    assert kwargs["enable_prefix_caching"] is True and kwargs["max_num_seqs"] == 32
    gens = backend.generate([[1, 2, 3]] * 32, max_new_tokens=4, temperature=0.0)
    assert backend.llm.calls == [32]  # the whole batch in one engine call, so it decodes together
    assert len(gens) == 32 and gens[0].finish_reason == "stop" and gens[0].logprobs == [-0.5, -0.1]


def test_explicit_engine_settings_win(fake_vllm):
    VLLMBackend(str(fake_vllm), max_num_seqs=8, enable_prefix_caching=False)
    kwargs = _LLM.built[-1]
    assert kwargs["max_num_seqs"] == 8 and kwargs["enable_prefix_caching"] is False
    VLLMBackend(str(fake_vllm))
    assert _LLM.built[-1]["max_num_seqs"] == 64  # default batch_size, as for the transformers backend
