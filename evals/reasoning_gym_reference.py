"""Gold answers for reasoning-gym entries, for ``replay:reference`` (a harness check).

An entry's ``answer`` is the gold answer. Four tasks of the hard split publish none (more
than one answer is right) and are answered from the entry's own metadata:

- ``graph_color``: the coloring the generator found (``possible_answer``);
- ``propositional_logic``: the generator's ``example_answer``;
- ``rubiks_cube``: the scramble undone (its moves reversed, each inverted);
- ``rush_hour``: a shortest solution found by breadth-first search over the board
  (``board_config``: 6x6 cells, ``o`` empty, ``x`` wall, pieces lettered from ``A``, the
  ``A`` car must reach the right edge of row 2), written as reasoning-gym's moves
  ``A+1 B-2 ...`` (a signed slide length after the piece's letter as the question shows
  it: the n-th piece in label order is the n-th letter, as reasoning-gym's board names it);
  the moves are checked against reasoning-gym's own board, whatever the labels.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any

from spade_envs.errors import SpadeError

_SIZE = 6
_GOAL = 2 * _SIZE + _SIZE - 2  #: the A car's first cell when it is out


def reference_for(name: str, item: dict[str, Any]) -> str:
    if item.get("answer") is not None:
        return str(item["answer"])
    meta = item.get("metadata") or {}
    if name == "graph_color" and meta.get("possible_answer") is not None:
        return json.dumps(meta["possible_answer"])
    if name == "propositional_logic" and meta.get("example_answer") is not None:
        return str(meta["example_answer"])
    if name == "rubiks_cube" and meta.get("scramble_moves"):
        return undo_moves(str(meta["scramble_moves"]))
    if name == "rush_hour" and meta.get("board_config"):
        return solve_rush_hour(str(meta["board_config"]))
    raise SpadeError(f"reasoning-gym {name}: the entry has no gold answer to replay")


_MOVE = re.compile(r"^(\d*)([LRDUBF])(w?)('?)(\d?)$")


def undo_moves(moves: str) -> str:
    """The moves that undo ``moves`` (reversed, each inverted), in the notation
    reasoning-gym's scorer reads: it drops a move with a leading layer number, so a layer
    ``k`` move is rewritten with outer moves (``kLw`` = layers 1..k: ``L`` or ``Lw``;
    ``2L`` = layer 2 alone = ``Lw L'``; scrambles of cubes up to 5 wide use layers 1-2)."""
    out: list[str] = []
    for move in reversed(moves.split()):
        m = _MOVE.match(move)
        if m is None:
            raise SpadeError(f"rubiks_cube: cannot read scramble move '{move}'")
        layer, face, wide, prime, count = m.groups()
        k = int(layer) if layer else (2 if wide else 1)
        if k > 2:
            raise SpadeError(f"rubiks_cube: scramble move '{move}' turns layer {k}; only layers 1-2 are replayed")
        inv, fwd = ("" if prime else "'"), ("'" if prime else "")
        if wide or k == 1:
            parts = [f"{face}{'w' if k == 2 else ''}{inv}"]
        else:  # layer 2 alone, inverted: (Lw L')^-1 = L Lw'
            parts = [f"{face}{fwd}", f"{face}w{inv}"]
        out += parts * (int(count) if count else 1)
    return " ".join(out)


def _pieces(board: str) -> tuple[list[str], list[tuple[int, int, int]], set[int]]:
    """Labels, ``(first cell, length, stride)`` per piece (label order), wall cells."""
    if len(board) != _SIZE * _SIZE:
        raise SpadeError(f"rush_hour board of {len(board)} cells (expected {_SIZE * _SIZE})")
    cells: dict[str, list[int]] = {}
    walls = set()
    for i, c in enumerate(board):
        if c == "x":
            walls.add(i)
        elif c != "o":
            cells.setdefault(c, []).append(i)
    labels = sorted(cells)
    return labels, [(cells[c][0], len(cells[c]), cells[c][1] - cells[c][0]) for c in labels], walls


def solve_rush_hour(board: str, max_states: int = 500_000) -> str:
    """A shortest solution of ``board`` in reasoning-gym's move notation."""
    labels, pieces, walls = _pieces(board)
    start = tuple(p for p, _, _ in pieces)

    def occupied(state: tuple[int, ...], skip: int) -> set[int]:
        out = set(walls)
        for j, pos in enumerate(state):
            if j != skip:
                _, length, stride = pieces[j]
                out.update(pos + k * stride for k in range(length))
        return out

    parent: dict[tuple[int, ...], tuple[tuple[int, ...], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state[0] == _GOAL:
            moves = []
            while parent[state] is not None:
                state, move = parent[state]  # type: ignore[misc]
                moves.append(move)
            return " ".join(reversed(moves))
        for j, pos in enumerate(state):
            _, length, stride = pieces[j]
            taken = occupied(state, j)
            for sign in (-1, 1):
                steps, cur = 0, pos
                while True:
                    nxt = cur + sign * stride
                    head = nxt if sign < 0 else nxt + (length - 1) * stride
                    if stride == 1 and (head < 0 or head >= _SIZE * _SIZE or head // _SIZE != pos // _SIZE):
                        break
                    if stride != 1 and not 0 <= head < _SIZE * _SIZE:
                        break
                    if head in taken:
                        break
                    cur, steps = nxt, steps + 1
                    new = state[:j] + (cur,) + state[j + 1:]
                    if new not in parent:
                        parent[new] = (state, f"{chr(65 + j)}{'+' if sign > 0 else '-'}{steps}")
                        queue.append(new)
        if len(parent) > max_states:
            break
    raise SpadeError("rush_hour: no solution found within the search limit")
