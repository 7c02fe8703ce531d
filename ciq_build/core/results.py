"""The table of evaluations a search made: best, Pareto front, CSV and JSON.

An :class:`Evaluation` is a plain dataclass. To carry more (the build driver
adds metrics, a failure cause and a cache key), subclass it with defaulted
fields and pass the subclass as ``record_type`` when loading; CSV and JSON
save every dataclass field.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ciq_build.errors import ConfigError

__all__ = [
    "OK",
    "INVALID",
    "ERROR",
    "Direction",
    "Evaluation",
    "Results",
    "dominates",
    "non_dominated",
    "hypervolume_2d",
]

OK = "ok"
INVALID = "invalid"  # the objective said so (INVALID_SCORE, NaN, wrong number of scores)
ERROR = "error"  # the objective raised; reason holds the exception text
STATUSES = (OK, INVALID, ERROR)

Direction = Literal["min", "max"]

_SCHEMA = 1


@dataclass(kw_only=True)
class Evaluation:
    """One evaluated candidate. ``scores`` is None unless ``status == "ok"``."""

    id: int
    generation: int
    params: dict[str, Any]
    scores: tuple[float, ...] | None
    status: str = OK
    reason: str = ""
    wall_time: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["scores"] = None if self.scores is None else list(self.scores)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        names = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        if known.get("scores") is not None:
            known["scores"] = tuple(float(s) for s in known["scores"])
        return cls(**known)


def _key(scores: Sequence[float], directions: Sequence[Direction]) -> tuple[float, ...]:
    """Scores turned into 'smaller is better' form."""
    return tuple(s if d == "min" else -s for s, d in zip(scores, directions, strict=True))


def dominates(a: Sequence[float], b: Sequence[float], directions: Sequence[Direction]) -> bool:
    """Whether scores ``a`` are at least as good as ``b`` everywhere and better somewhere."""
    ka, kb = _key(a, directions), _key(b, directions)
    return all(x <= y for x, y in zip(ka, kb)) and any(x < y for x, y in zip(ka, kb))


def non_dominated(points: Sequence[Sequence[float]], directions: Sequence[Direction]) -> list[int]:
    """Indices (ascending) of the points no other point dominates (duplicates all kept)."""
    keys = [_key(p, directions) for p in points]
    front: list[int] = []
    # In lexicographic order a point can only be dominated by an earlier one, and
    # whatever dominates it is dominated by (or is) a member of the front so far.
    for i in sorted(range(len(keys)), key=lambda i: keys[i]):
        k = keys[i]
        if not any(
            all(a <= b for a, b in zip(keys[j], k)) and any(a < b for a, b in zip(keys[j], k)) for j in front
        ):
            front.append(i)
    return sorted(front)


def hypervolume_2d(
    points: Iterable[Sequence[float]], reference: Sequence[float], directions: Sequence[Direction] = ("min", "min")
) -> float:
    """Area dominated by ``points`` and bounded by ``reference`` (two objectives)."""
    if len(directions) != 2 or len(reference) != 2:
        raise ConfigError("hypervolume_2d needs exactly two objectives")
    ref = _key(reference, directions)
    pts = sorted({_key(p, directions) for p in points if all(a < r for a, r in zip(_key(p, directions), ref))})
    area, best_y = 0.0, ref[1]
    for x, y in pts:  # sweep by the first objective; keep only steps down in the second
        if y < best_y:
            area += (ref[0] - x) * (best_y - y)
            best_y = y
    return area


class Results:
    """Every evaluation of a search, in the order they were told."""

    def __init__(
        self,
        directions: Sequence[Direction] = ("min",),
        evaluations: Iterable[Evaluation] = (),
        objective_names: Sequence[str] | None = None,
    ):
        directions = tuple(directions)
        if not directions or any(d not in ("min", "max") for d in directions):
            raise ConfigError(f'directions must be a non-empty list of "min"/"max", got {directions!r}')
        self.directions: tuple[Direction, ...] = directions  # type: ignore[assignment]
        names = tuple(objective_names) if objective_names else tuple(
            f"score_{i + 1}" for i in range(len(directions))
        )
        if len(names) != len(directions):
            raise ConfigError(f"{len(names)} objective names for {len(directions)} objectives")
        self.objective_names = names
        self._evaluations: list[Evaluation] = []
        for evaluation in evaluations:
            self.add(evaluation)

    @property
    def num_objectives(self) -> int:
        return len(self.directions)

    def add(self, evaluation: Evaluation) -> None:
        if evaluation.status not in STATUSES:
            raise ConfigError(f"evaluation status must be one of {STATUSES}, got {evaluation.status!r}")
        if evaluation.ok and (evaluation.scores is None or len(evaluation.scores) != self.num_objectives):
            raise ConfigError(
                f"evaluation {evaluation.id} is ok but has scores {evaluation.scores!r}; "
                f"expected {self.num_objectives} numbers"
            )
        self._evaluations.append(evaluation)

    def __len__(self) -> int:
        return len(self._evaluations)

    def __iter__(self) -> Iterator[Evaluation]:
        return iter(self._evaluations)

    def get_results(self, status: str | None = None) -> list[Evaluation]:
        """All evaluations (or those with one status), in the order they were told."""
        return [e for e in self._evaluations if status is None or e.status == status]

    @property
    def failures(self) -> int:
        return sum(1 for e in self._evaluations if not e.ok)

    def get_best_result(self) -> Evaluation | None:
        """The best ok evaluation; None if there is none.

        With several objectives "best" is lexicographic in objective order (the
        first objective decides, the next breaks ties); use :meth:`pareto_front`
        for the trade-offs. Ties keep the earliest evaluation.
        """
        best: Evaluation | None = None
        for e in self._evaluations:
            if e.ok and (best is None or _key(e.scores, self.directions) < _key(best.scores, self.directions)):  # type: ignore[arg-type]
                best = e
        return best

    def pareto_front(self) -> list[Evaluation]:
        """The ok evaluations that no other ok evaluation dominates, under each objective's direction."""
        ok = [e for e in self._evaluations if e.ok]
        keep = non_dominated([e.scores for e in ok], self.directions)  # type: ignore[misc]
        return [ok[i] for i in keep]

    # -- persistence -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": _SCHEMA,
            "directions": list(self.directions),
            "objective_names": list(self.objective_names),
            "evaluations": [e.to_dict() for e in self._evaluations],
        }

    def save_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, default=repr) + "\n", encoding="utf-8")

    @classmethod
    def load_json(cls, path: str | Path, record_type: type[Evaluation] = Evaluation) -> Results:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            if data.get("schema") != _SCHEMA:
                raise ConfigError(f"{path}: unknown results schema {data.get('schema')!r} (expected {_SCHEMA})")
            return cls(
                data["directions"],
                [record_type.from_dict(e) for e in data["evaluations"]],
                data.get("objective_names"),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigError(f"cannot read results from {path}: {error}") from None

    def save_csv(self, path: str | Path) -> None:
        """One row per evaluation: the record's fields, scores spread over one column each.

        Column names of the scores carry the direction (``time:min``) so that
        :meth:`load_csv` can restore it; params and other structured fields are JSON.
        """
        record_fields = self._fields()
        score_columns = [f"{n}:{d}" for n, d in zip(self.objective_names, self.directions)]
        header = [f for f in record_fields if f != "scores"] + score_columns
        with Path(path).open("w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            writer.writerow(header)
            for e in self._evaluations:
                row = []
                for name in record_fields:
                    if name == "scores":
                        continue
                    value = getattr(e, name)
                    row.append(value if isinstance(value, (str, int, float)) else json.dumps(value, default=repr))
                row += [repr(s) for s in e.scores] if e.scores is not None else [""] * self.num_objectives
                writer.writerow(row)

    @classmethod
    def load_csv(cls, path: str | Path, record_type: type[Evaluation] = Evaluation) -> Results:
        try:
            with Path(path).open(newline="", encoding="utf-8") as stream:
                rows = list(csv.reader(stream))
            header, body = rows[0], rows[1:]
            score_at = [i for i, h in enumerate(header) if h.rsplit(":", 1)[-1] in ("min", "max") and ":" in h]
            names = [header[i].rsplit(":", 1)[0] for i in score_at]
            directions = [header[i].rsplit(":", 1)[1] for i in score_at]
            types = {f.name: f.type for f in dataclasses.fields(record_type)}
            evaluations = []
            for row in body:
                data: dict[str, Any] = {}
                for i, h in enumerate(header):
                    if i in score_at or h not in types:
                        continue
                    data[h] = _from_cell(row[i], str(types[h]))
                cells = [row[i] for i in score_at]
                data["scores"] = None if any(c == "" for c in cells) else tuple(float(c) for c in cells)
                evaluations.append(record_type.from_dict(data))
            return cls(directions, evaluations, names)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
            raise ConfigError(f"cannot read results from {path}: {error}") from None

    def _fields(self) -> list[str]:
        types = {type(e) for e in self._evaluations} or {Evaluation}
        names: list[str] = []
        for t in sorted(types, key=lambda t: t.__qualname__):
            names += [f.name for f in dataclasses.fields(t) if f.name not in names]
        return names

    @classmethod
    def load(cls, path: str | Path, record_type: type[Evaluation] = Evaluation) -> Results:
        """Load a .json or .csv written by save_json / save_csv."""
        suffix = Path(path).suffix.lower()
        if suffix == ".csv":
            return cls.load_csv(path, record_type)
        if suffix == ".json":
            return cls.load_json(path, record_type)
        raise ConfigError(f"{path}: results files end in .json or .csv")

    def save(self, path: str | Path) -> None:
        suffix = Path(path).suffix.lower()
        if suffix == ".csv":
            self.save_csv(path)
        elif suffix == ".json":
            self.save_json(path)
        else:
            raise ConfigError(f"{path}: results files end in .json or .csv")


def _from_cell(cell: str, type_name: str) -> Any:
    """A CSV cell back to its field's type (str stays str; numbers; JSON for the rest)."""
    if type_name in ("str", "'str'"):
        return cell
    if type_name in ("int", "'int'"):
        return int(cell)
    if type_name in ("float", "'float'"):
        return float(cell)
    if cell == "":
        return None
    try:
        return json.loads(cell)
    except ValueError:
        return cell

