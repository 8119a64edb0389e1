"""Reading files of a folder someone else made (a pool): inside it, no links, sizes first.

Contract: :func:`read_inside` reads ``root/rel`` only when every component below ``root``
is a real directory or (the last) a regular file — never a symbolic link — and the
opened file is the one checked (``O_NOFOLLOW`` and ``fstat`` on the open descriptor, so a
link swapped in after the check is refused too); its size is checked with ``fstat``
*before* anything is read, so a sparse 1 GiB file costs nothing. A caller-named
``links_into`` folder is the one exception: links whose target lies inside it are
followed (the Hugging Face cache, whose snapshot files are links into its ``blobs/``;
named by the caller, never by the data). :func:`loads_bounded` parses JSON whose
nesting is first measured (linear, strings skipped), so 100,000 ``[`` give
:class:`ValueError` ("nested deeper than ...") instead of a RecursionError. Every refusal
is :class:`UnsafePath` (a ``ValueError``) with a message naming the file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Any

MAX_JSON_DEPTH = 64
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "[]{}"))


class UnsafePath(ValueError):
    """A pool path that is a link, leaves the folder, is not a regular file or is too big."""


def _parts(rel: str) -> tuple[str, ...]:
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts) or "\\" in rel:
        raise UnsafePath(f"{rel!r} is a path outside the pool")
    return p.parts


def checked_path(root: Path, rel: str, *, links_into: Path | None = None) -> Path:
    """``root/rel`` after checking that no component is a link (unless it resolves into
    ``links_into``) and that it resolves inside ``root``; raises :class:`UnsafePath`."""
    root = Path(root)
    here = root
    for part in _parts(rel):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            raise UnsafePath(f"{rel} is missing") from None
        except OSError as exc:
            raise UnsafePath(f"cannot read {rel}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            target = here.resolve()
            if links_into is None or not target.is_relative_to(Path(links_into).resolve()):
                raise UnsafePath(f"{rel} is a symbolic link ({here.name} -> outside the pool's own files); "
                                 "links are not followed; refusing it")
    resolved = here.resolve()
    if links_into is None and not resolved.is_relative_to(root.resolve()):
        raise UnsafePath(f"{rel} resolves outside the pool; refusing it")
    return here


def read_inside(root: Path, rel: str, max_bytes: int, *, links_into: Path | None = None) -> bytes:
    """The bytes of ``root/rel`` (checked as in the module docstring, at most ``max_bytes``)."""
    path = checked_path(root, rel, links_into=links_into)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    if links_into is not None:
        path = path.resolve()  # a link was allowed above (into links_into): open its target
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UnsafePath(f"cannot read {rel}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{rel} is not a regular file; refusing it")
        if st.st_size > max_bytes:
            raise UnsafePath(f"{rel} is {st.st_size} bytes, more than the {max_bytes}-byte cap; not read")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:  # it grew after the fstat
            raise UnsafePath(f"{rel} is larger than the {max_bytes}-byte cap; not read")
        return data
    finally:
        os.close(fd)


def json_depth(text: str) -> int:
    """The bracket nesting depth of JSON ``text`` (strings skipped; linear time)."""
    depth = best = 0
    for ch in _STRINGS.sub("", text).translate(_BRACKETS):
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        else:
            depth -= 1
    return best


def loads_bounded(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` of ``text`` nested at most ``max_depth`` deep (:class:`ValueError`
    otherwise, and for invalid JSON)."""
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"JSON nested {depth} deep, more than the {max_depth} allowed")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth bound is far below the recursion limit
        raise ValueError(f"JSON nested deeper than {max_depth}") from None
