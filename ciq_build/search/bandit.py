"""Credit for the portfolio's arms: the area under each arm's improvement curve over a sliding window.

OpenTuner's AUC bandit meta-technique (Ansel et al., PACT 2014;
``opentuner/search/bandittechniques.py``), as pyATF's ``AUCBandit`` also
does it: every evaluation is recorded as (arm, whether it improved on the
best found), the last ``window`` of them are kept, and an arm's score is the
area under its own curve of improvements -- recent ones weigh more -- plus an
exploration term that favours arms used less:

    score = auc(arm) + C * sqrt(2 * log2(len(history)) / uses(arm))

An arm never used scores infinity, so each is tried once. ``C`` = 0.05 and a
window of 500 are OpenTuner's defaults.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

AUC_C = 0.05
AUC_WINDOW = 500


class AucBandit:
    """The AUC credit of a fixed set of arms, named by their index."""

    def __init__(self, arms: int, c: float = AUC_C, window: int = AUC_WINDOW) -> None:
        self.c, self.window = c, window
        self._history: deque[tuple[int, bool]] = deque()
        self._uses = [0] * arms
        self._auc = [0] * arms  # sum over the arm's uses in the window of its position when it improved
        self._decay = [0] * arms  # the arm's improvements in the window: what the sum loses when one use leaves

    def record(self, arm: int, improved: bool) -> None:
        """One evaluation proposed by `arm`, and whether it improved on the best found before it."""
        self._history.append((arm, improved))
        self._uses[arm] += 1
        if improved:
            self._auc[arm] += self._uses[arm]
            self._decay[arm] += 1
        if len(self._history) > self.window:
            old, old_improved = self._history.popleft()
            self._auc[old] -= self._decay[old]
            if old_improved:
                self._decay[old] -= 1
            self._uses[old] -= 1

    def exploitation(self, arm: int) -> float:
        uses = self._uses[arm]
        return self._auc[arm] / (uses * (uses + 1) / 2) if uses else 0.0

    def score(self, arm: int, pending: int = 0) -> float:
        """The arm's score; `pending` counts its uses handed out in this batch and not yet recorded."""
        uses = self._uses[arm] + pending
        if not uses:
            return math.inf
        total = len(self._history) + pending
        return self.exploitation(arm) + self.c * math.sqrt(2 * math.log2(max(total, 2)) / uses)

    def order(self, pending: Sequence[int], tie: Sequence[float]) -> list[int]:
        """The arms best first; equal scores by `tie` (a seeded draw per arm)."""
        return sorted(range(len(self._uses)), key=lambda arm: (-self.score(arm, pending[arm]), tie[arm]))
