"""vLLM sampling seeds, with stand-in engines that record the requests and sample as
vLLM does (one RNG per request, seeded from that request's own ``seed``): the rows of
a GRPO group must get different completions in colocate and server mode."""

from __future__ import annotations

import random
from types import SimpleNamespace

from spade_envs.selfplay.policy import TrainerVLLMColocateBackend, TrainerVLLMServerBackend, request_seeds
from vllm_stubs import StubTokenizer


class _Params:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _sample(prompt, seed, n_tokens=6):
    rng = random.Random(seed) if seed is not None else random.Random()
    return [rng.randrange(10, 1000) for _ in range(n_tokens)] + [2]


class _FakeLLM:
    """Colocated engine: ``generate(prompts, params)`` with one params object per prompt or one for all."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, params, use_tqdm=False):
        per = params if isinstance(params, list) else [params] * len(prompts)
        self.calls.append(per)
        outs = []
        for p, sp in zip(prompts, per):
            ids = _sample(p["prompt_token_ids"], sp.seed)
            comp = SimpleNamespace(token_ids=ids, logprobs=[{t: SimpleNamespace(logprob=-0.5)} for t in ids])
            outs.append(SimpleNamespace(outputs=[comp]))
        return outs


class _FakeClient:
    """``trl vllm-serve`` client: ONE seed per request; ``n`` children get seed + index."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, n=1, temperature=1.0, max_tokens=16, logprobs=0, generation_kwargs=None):
        self.calls.append({"prompts": prompts, "n": n, "kwargs": dict(generation_kwargs or {})})
        seed = (generation_kwargs or {}).get("seed")
        ids = [_sample(p, None if seed is None else seed + c) for p in prompts for c in range(n)]
        return {"completion_ids": ids, "logprobs": [[[-0.5]] * len(x) for x in ids]}


def _trainer():
    return SimpleNamespace(processing_class=StubTokenizer(), state=SimpleNamespace(global_step=0), _last_loaded_step=0,
                           accelerator=SimpleNamespace(process_index=0, num_processes=1),
                           vllm_generation=SimpleNamespace(sync_weights=lambda: None))


def test_request_seeds_are_distinct_per_request_and_rank():
    a, b = request_seeds(7, 4), request_seeds(7, 4, rank=1)
    assert len(set(a)) == 4 and not set(a) & set(b)
    assert request_seeds(None, 3) == [None, None, None]


def test_colocate_sends_one_seed_per_request_so_group_rows_differ():
    llm = _FakeLLM()
    be = TrainerVLLMColocateBackend(_trainer(), name="m", llm=llm, sampling_params=_Params)
    group = [[1, 5, 9]] * 4  # one prompt, four rows of a GRPO group
    gens = be.generate(group, max_new_tokens=8, temperature=0.6, seed=123)
    seeds = [p.seed for p in llm.calls[0]]
    assert len(set(seeds)) == 4
    assert len({tuple(g.token_ids) for g in gens}) == 4
    again = be.generate(group, max_new_tokens=8, temperature=0.6, seed=123)
    assert [g.token_ids for g in again] == [g.token_ids for g in gens]  # still reproducible


def test_server_sends_identical_prompts_once_with_n():
    client = _FakeClient()
    be = TrainerVLLMServerBackend(_trainer(), name="m", client=client)
    prompts = [[1, 5]] * 3 + [[4, 4]] * 3 + [[8]]
    gens = be.generate(prompts, max_new_tokens=8, seed=9)
    assert sorted(c["n"] for c in client.calls) == [1, 3]
    by_n = {c["n"]: c for c in client.calls}
    assert sorted(map(tuple, by_n[3]["prompts"])) == [(1, 5), (4, 4)]
    assert len({tuple(g.token_ids) for g in gens[:3]}) == 3 and len({tuple(g.token_ids) for g in gens[3:6]}) == 3
    assert all(g.prompt_token_ids == p for g, p in zip(gens, prompts))
