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
        return f"{NAMESPACE}/Env-{self.seq:05d}"

    @property
    def name(self) -> str:
        """``Env-00421``: the Gymnasium ``name`` part."""
        return f"Env-{self.seq:05d}"

    def __str__(self) -> str:
        return self.base if self.version is None else f"{self.base}-v{self.version}"

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


def format_env_id(seq: int, version: int | None = None) -> str:
    return str(EnvId(seq, version))
