"""Evals (DESIGN.md section 9): registry suites (:mod:`.registry_suite`, :mod:`.splits`),
BFCL-v4 multi-turn (:mod:`.bfcl`, :mod:`.bfcl_exec`, :mod:`.bfcl_agents`), ACEBench agent
(:mod:`.acebench`), statistics (:mod:`.stats`) and reports (:mod:`.report`).

``is_heldout(env_id)`` is the one function training code needs: held-out environments
are never sampled for self-play.
"""

from .splits import is_heldout, split_of

__all__ = ["is_heldout", "split_of"]
