"""Attacks: a program's text (an exception message, a description) carries terminal
control sequences that would redraw the verdict the user reads (DESIGN.md section 5:
control characters are stripped from every human-readable verdict)."""

from __future__ import annotations

import json

import pytest
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.cli.main import main
from spade_envs.textsafe import safe_text

#: erase the line above, return, draw a green "accepted"; rich markup; backspaces; a bidi override
FORGERY = "\\x1b[1A\\x1b[2K\\r\\x1b[32maccepted\\x1b[0m [green]accepted[/green]\\b\\b\\x07\\x9b2J\\u202e"
CONTROL = ["\x1b", "\r", "\b", "\x07", "\x9b", "\u202e"]

FORGING_PROGRAM = f'''
METADATA = {{"name": "Forger", "skill": "forgery", "description": "{FORGERY}"}}


class ForgerEnv:
    def __init__(self, **kwargs):
        pass

    def reset(self, seed=None):
        raise ValueError("{FORGERY}")

    def step(self, action):
        return "", 0.0, True, False, {{}}
'''


def _run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_safe_text_strips_sequences_and_controls_but_keeps_lines():
    raw = "ok\n\tnext\x1b[31mred\x1b[0m\x1b]0;title\x07\rover\bX\x00\x7f\x85\u2066done"
    assert safe_text(raw) == "ok\n\tnextredoverXdone"
    assert safe_text("plain ✓ text") == "plain ✓ text"


def test_spade_validate_table_cannot_forge_a_verdict(tmp_path, capsys):
    path = tmp_path / "forger_env.py"
    path.write_text(FORGING_PROGRAM)
    code, out, err = _run(capsys, "validate", str(path), "--no-novelty")
    assert code == 1
    assert not [c for c in CONTROL if c in out + err], repr(out[-400:])
    assert "rejected at" in out and "[green]accepted[/green]" in out  # the markup shown as text, not drawn


def test_registry_show_and_add_strip_program_text(spade_home, tmp_path, capsys, monkeypatch):  # noqa: F811
    from spade_envs.cli import registry_common
    from spade_envs.registry.store import Registry

    with Registry.open() as reg:
        env_id = str(reg.add(FORGING_PROGRAM.replace("raise ValueError", "return 'x', {} #")).env_id)
    code, out, err = _run(capsys, "registry", "show", env_id, "--source")
    assert code == 0 and "Forger" in out
    assert not [c for c in CONTROL if c in out], repr(out[:400])
    code, out, _ = _run(capsys, "registry", "show", env_id, "--json")  # JSON escapes them itself
    assert "\x1b" not in out and "\\u001b" in out and json.loads(out)["metadata"]["description"].startswith("\x1b")

    path = tmp_path / "forger_env.py"
    path.write_text(FORGING_PROGRAM)
    monkeypatch.setattr(registry_common, "acceptance_runner", lambda *a, **k: lambda source, name: {
        "accepted": False, "rejected_at": "smoke", "stages": [{"name": "smoke", "ok": False,
                                                               "detail": "reset raised: \x1b[32maccepted\r"}]})
    code, out, err = _run(capsys, "registry", "add", str(path))
    assert code == 1 and "rejected at smoke" in out + err
    assert not [c for c in CONTROL if c in out + err]


@pytest.mark.parametrize("message", ["\x1b[2K\rspade: ok", "bad\x1b]8;;http://x\x07link"])
def test_error_lines_are_stripped(capsys, message):
    from spade_envs.cli.main import fail

    fail(message)
    err = capsys.readouterr().err
    assert err.startswith("spade: error: ") and not [c for c in CONTROL if c in err]
