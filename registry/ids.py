"""Environment ids: ``spade/Env-NNNNN-vK`` (DESIGN.md section 4).

The only place ids are parsed or formatted. The sequence number is zero-padded to five
digits (wider past 99999); the version starts at 0. ``spade/Env-00421`` without a
version means "the latest version".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidEnvIdError

NAMESPACE = "spade"

_ID_RE = re.compile(r"^(?:(?:spade_envs:)?(?P<ns>spade)/)?Env-(?P<seq>\d{5,})(?:-v(?P<version>\d+))?$")


@dataclass(frozen=True, order=True)
class EnvId:
    """A parsed id. ``version`` is None when the id asked for the latest."""

    seq: int
    version: int | None = None

    @property
    def base(self) -> str:
        """``spade/Env-00421`` (no version)."""
        return format_env_id(self.seq)

    @property
    def name(self) -> str:
        """``Env-00421``: the Gymnasium ``name`` part."""
        return env_name(self.seq)

    def __str__(self) -> str:
        return format_env_id(self.seq, self.version)

    def with_version(self, version: int) -> "EnvId":
        return EnvId(self.seq, version)


def parse_env_id(text: str) -> EnvId:
    """Parse ``spade/Env-00421``, ``spade/Env-00421-v2``, ``Env-00421`` or the
    ``spade_envs:``-prefixed form; raise :class:`InvalidEnvIdError` otherwise."""
    if not isinstance(text, str):
        raise InvalidEnvIdError(f"environment id must be a string, got {type(text).__name__}")
    m = _ID_RE.match(text.strip())
    if not m:
        raise InvalidEnvIdError(
            f"'{text}' is not a spade environment id; expected the form spade/Env-00421 or spade/Env-00421-v0"
        )
    version = m.group("version")
    return EnvId(int(m.group("seq")), int(version) if version is not None else None)


def env_name(seq: int) -> str:
    """``Env-00421``: the Gymnasium ``name`` of sequence number ``seq``."""
    return f"Env-{seq:05d}"


def format_env_id(seq: int, version: int | None = None) -> str:
    """``spade/Env-00421-v2`` (``spade/Env-00421`` without ``version``): every id the
    package writes is formatted here (cheap: Gymnasium registration calls it per entry)."""
    base = f"{NAMESPACE}/Env-{seq:05d}"
    return base if version is None else f"{base}-v{version}"


def seq_of_name(name: str) -> int | None:
    """The sequence number in a Gymnasium ``name`` such as ``Env-00421`` (None otherwise)."""
    m = _ID_RE.match(name) if isinstance(name, str) and name.startswith("Env-") else None
    return None if m is None or m.group("version") is not None else int(m.group("seq"))


def seq_of_key(key: object) -> int | None:
    """The sequence number of a Gymnasium registry key ``spade/Env-00421[-vK]`` exactly as
    written (no prefix, no spaces; None for anything else, never an error): the lazy
    registry's cheap test of whether a looked-up key is a spade store id."""
    if not isinstance(key, str) or not key.startswith(NAMESPACE + "/"):
        return None
    m = _ID_RE.match(key)
    return None if m is None else int(m.group("seq"))


def base_of(text: str) -> str:
    """``spade/Env-00421`` of an id with or without its version (parsed: raises
    :class:`InvalidEnvIdError` for a non-id)."""
    return parse_env_id(text).base
