"""The designer's skills and modes, written once (light to import: no other module).

:data:`SKILLS` are SPADE's six skills; :data:`MODES` the program kinds a designer prompt
asks for, :data:`DEFAULT_MODES` the ones drawn when none is asked (multi-player games
only on request). The designer's prompts (:mod:`.prompts`), ``spade design`` and the
self-play settings (``SelfPlayConfig.skills``/``modes``) read them from here.
"""

from __future__ import annotations

SKILLS: tuple[str, ...] = (
    "mathematical reasoning", "logical deduction", "spatial reasoning",
    "pattern recognition", "optimization", "causal inference",
)
MODES: tuple[str, ...] = ("puzzle", "game", "tool", "multiplayer")
#: modes drawn at random when none is asked for (multi-player games only on request)
DEFAULT_MODES: tuple[str, ...] = ("puzzle", "game", "tool")
