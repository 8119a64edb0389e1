"""The ``spade bench`` measurements, one module per bench (outside the layer packages).

Each module exposes ``run(**options) -> dict`` of named figures and
is run by :mod:`spade_envs.cli.bench`. Benches sit at the top of the import layers
(``docs/architecture.md``): they may import any package, and no package imports them.

- :mod:`.sandbox`: sandboxed vs in-process step latency, worker start-up.
- :mod:`.registry`: store open, registration at scale, first ``gym.make``.
- :mod:`.rollout`: batched multi-turn rollouts with the packaged model.
- :mod:`.prefix_sliding`: decode speed and KV memory with Prefix Sliding.
"""
