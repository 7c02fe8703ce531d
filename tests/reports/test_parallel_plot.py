"""The parallel-coordinates plot's axis labels never overlap, however long the knob names (matplotlib, no tune)."""

from __future__ import annotations

from itertools import combinations
from types import SimpleNamespace

import pytest

from ciq_build.core.objectives import parse_objectives
from ciq_build.reports.plots import plot_parallel


@pytest.mark.parametrize("count", [3, 12])
def test_the_parallel_coordinates_labels_do_not_overlap(count: int) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    names = [f"knob.Xptxas_allow_expensive_optimizations_{k}" for k in range(count)]
    scored = [SimpleNamespace(params={name: (k + j) % 4 for j, name in enumerate(names)}, scores=(float(k),))
              for k in range(6)]
    history = SimpleNamespace(parameters=lambda: names, objectives=parse_objectives(["registers"]), scored=scored)
    figure = plot_parallel(pyplot, history)  # type: ignore[arg-type]  # what the plot reads of a TuneHistory
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [label.get_window_extent(renderer) for label in figure.axes[0].get_xticklabels()]
    assert len(boxes) == count + 1
    overlapping = [(a, b) for (a, x), (b, y) in combinations(enumerate(boxes), 2) if x.overlaps(y)]
    assert not overlapping, overlapping
    pyplot.close(figure)
