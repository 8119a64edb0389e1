"""Program-controlled text made safe for a terminal (DESIGN.md section 5).

Verdict details, error messages, names and sources come from programs and registry rows
that others wrote. Printed as they are, terminal control sequences in them can redraw
what the user sees (an error drawing a green "accepted" over a rejection, a carriage
return overwriting a line). :func:`safe_text` removes, from any text meant for a human:

- escape sequences: CSI (``ESC [ ... final``), OSC (``ESC ] ... BEL|ST``), DCS/SOS/PM/APC
  strings and two-character ``ESC x`` sequences, whole;
- every other C0 control except newline and tab (so CR, backspace, BEL, ESC go), DEL,
  and C1 controls (U+0080-U+009F, which some terminals read as CSI);
- Unicode bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069), which
  reorder what is displayed.

``--json`` output is not passed through it (JSON escapes control characters itself).
Markup of a rich console is a separate matter: escape with ``rich.markup.escape`` too.
"""

from __future__ import annotations

import re
from typing import Any

_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC (to BEL or ST, or the end)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x1b[ -~]?"  # two-character escapes (and a lone ESC)
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(value: Any) -> str:
    """``str(value)`` without terminal control sequences and control characters (newline
    and tab kept); see the module docstring."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))
