"""jieba's part-of-speech HMM (`jieba.posseg.viterbi`), computed with numpy: the same route
and the same probability, bit for bit.

jieba's tagger guesses the words and tags of every run of characters its dictionary cannot
place with a Viterbi pass over 256 states (B/M/E/S × tag), in pure Python: at each character
it takes, for every state the character allows, the best of every state before it — a
Python `max` over (probability, state) tuples, ~1,000 of them a character on real prose.
That was most of graph growth's CPU (23 ms a 400-character chunk of the CUV). Here each step
is one matrix of the same sums:

- the same tables (jieba's start, transition and emission log-probabilities, its table of the
  states each character may take), passed in by the caller (`retrieval.text`, jieba's
  adapter);
- the same states at each step: those the character allows among those the states before it
  lead to, or all those they lead to when none is allowed; a state leading nowhere is no
  predecessor;
- the same float operations in the same order: (V[t-1] + transition) + emission, a missing
  transition −inf and a missing emission jieba's MIN_FLOAT, so every sum is the same double;
- the same choice on equal probabilities: Python's `max` over (prob, state) takes the
  largest state, and here states are numbered in their sort order and the last best is taken.

Where jieba's pass would fail (every state before a character leads nowhere: its `max` of
nothing) the caller's `fallback` (jieba's own pass) runs instead, failing the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

State = tuple[str, str]  # (B/M/E/S, part-of-speech tag)
Route = tuple[float, list[State]]
Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]
Flags = npt.NDArray[np.bool_]

MIN_FLOAT = -3.14e100  # jieba.posseg.viterbi.MIN_FLOAT: an emission the table lacks
EMISSIONS_KEPT = 8192  # characters whose emission column is kept (2 KB each)


class PosViterbi:
    """jieba's part-of-speech Viterbi over its tables; `route(text)` is
    `jieba.posseg.viterbi.viterbi(text, char_state, start, trans, emit)`."""

    def __init__(
        self,
        char_state: Mapping[str, Sequence[State]],
        start: Mapping[State, float],
        trans: Mapping[State, Mapping[State, float]],
        emit: Mapping[State, Mapping[str, float]],
        fallback: Callable[[str], Route],
    ) -> None:
        # Numbered from the largest: the first best of numpy's argmax is Python's max.
        self.states: list[State] = sorted(trans, reverse=True)
        number = {s: i for i, s in enumerate(self.states)}
        n = len(self.states)
        self._start = np.array([start[s] for s in self.states], dtype=np.float64)
        # Transitions by (state, state before it): a step's sums are rows, one per state.
        self._into = np.full((n, n), -np.inf, dtype=np.float64)
        self._follows = np.zeros((n, n), dtype=np.bool_)
        for s, nexts in trans.items():
            for t, p in nexts.items():
                self._into[number[t], number[s]] = p
                self._follows[number[s], number[t]] = True
        self._leads: Flags = np.logical_or.reduce(self._follows, axis=1)
        self._number = number
        self._char_state = char_state
        self._every: tuple[Indices, Flags] = (np.arange(n), np.ones(n, dtype=np.bool_))
        self._allowed: dict[str, tuple[Indices, Flags]] = {}  # made as characters come
        self._emit = emit
        self._columns: dict[str, Floats] = {}
        self._fallback = fallback

    def _states(self, ch: str) -> tuple[Indices, Flags]:
        """The states `ch` may take (every state for a character the table lacks)."""
        allowed = self._allowed.get(ch)
        if allowed is None:
            states = self._char_state.get(ch)
            if states is None:
                return self._every
            flags = np.zeros(len(self.states), dtype=np.bool_)
            flags[[self._number[s] for s in states]] = True
            allowed = self._allowed[ch] = (np.flatnonzero(flags), flags)
        return allowed

    def _emission(self, ch: str) -> Floats:
        """Every state's emission log-probability of `ch` (MIN_FLOAT where it has none)."""
        column = self._columns.get(ch)
        if column is None:
            column = np.array(
                [self._emit[s].get(ch, MIN_FLOAT) for s in self.states], dtype=np.float64
            )
            if len(self._columns) >= EMISSIONS_KEPT:
                self._columns.clear()
            self._columns[ch] = column
        return column

    def route(self, text: str) -> Route:
        """The most probable state of each character of `text` (non-empty) and the route's
        log-probability."""
        states, _ = self._states(text[0])
        best = self._start[states] + self._emission(text[0])[states]
        steps: list[tuple[Indices, Indices]] = []  # each step's states and their predecessors
        for ch in text[1:]:
            leads = self._leads[states]
            before = states[leads]
            if not before.size:
                return self._fallback(text)
            expected = np.logical_or.reduce(self._follows[before], axis=0)
            flags = self._states(ch)[1] & expected
            now = np.flatnonzero(flags if flags.any() else expected)
            into = self._into.take(now, axis=0).take(before, axis=1)
            scores = (best[leads] + into) + self._emission(ch)[now][:, None]
            pick = np.argmax(scores, axis=1)  # the first best: the largest state
            best = scores[np.arange(len(now)), pick]
            steps.append((now, before[pick]))
            states = now
        last = int(np.argmax(best))
        prob, state = float(best[last]), int(states[last])
        route = [state]
        for now, before in reversed(steps):
            state = int(before[np.searchsorted(now, state)])
            route.append(state)
        return prob, [self.states[s] for s in reversed(route)]
