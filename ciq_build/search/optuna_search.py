"""Optuna's samplers as strategies (`--strategy tpe`, `--strategy nsga2`; the `[optuna]` extra).

Optuna's ask-and-tell interface drives one in-memory study per tune: each
batch is ``pool_size`` trials asked from the sampler, until the search loop
stops asking: how many trials is the loop's budget, not the sampler's (the
planned evaluations, ``--max-evaluations``, ``--time-limit``: Optuna's
``optimize(n_trials=, timeout=)``). Each parameter of the grid is one integer
distribution over its value indices, with -1 for "absent" where it may be
knocked out, so an ordered grid (a range of register caps) stays ordered
for the sampler. The compiler's defaults and ``--seed-from`` seeds are
enqueued first (Optuna's ``enqueue_trial``). The sampler is seeded from
``--seed`` and told the scores in the order it asked, so a resumed tune
that replays its journal gets the same trials again.

A trial whose configuration was told before (or that CONSTRAINTS refuse) is
told at once, without a proposal: the loop sees each configuration once.
CMA-ES is not offered: Optuna's CmaEsSampler needs another package, and
these spaces are small discrete grids, which it samples no better than TPE.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ciq_build.core.space import Genome, Param, as_space
from ciq_build.errors import ConfigError, SearchError
from ciq_build.search.base import FirstBatchCheck, Proposal
from ciq_build.search.evolution import SearchConfiguration
from ciq_build.search.strategy import GRID, SearchRequest, configured
from ciq_build.search.strategy_options import strategy_option

_ASKS = 40  # trials asked per slot before the batch is left short (the sampler keeps repeating told ones)
ABSENT = -1  # the index of "knocked out": the compiler's default for that control


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError("the Optuna strategies need Optuna: pip install \"ciq-build[optuna]\" "
                          "(or use --strategy ga or random)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a line per trial otherwise
    return optuna


class OptunaSource:
    """Batches of trials from one Optuna sampler over knobs, params and ACF pools."""

    ended_by_the_loop = True  # how many trials is the loop's plan, as optimize(n_trials=) (CandidateSource)

    def __init__(self, space: Mapping[str, Param], config: SearchConfiguration, objective_names: list[str],
                 sampler_name: str, make_sampler: Callable[[Any, SearchConfiguration], Any],
                 seeds: Sequence[Mapping[str, Any]] = ()):
        optuna = _optuna()
        self._optuna = optuna
        self.space = as_space(space)
        self.config = config
        self.sampler_name = sampler_name
        self.objective_names = list(objective_names)
        self.seed = config.seed if config.seed is not None else 0
        with warnings.catch_warnings():  # some samplers are marked experimental
            warnings.simplefilter("ignore")
            sampler = make_sampler(optuna, config)
        self.study = optuna.create_study(
            directions=["minimize" if d == "min" else "maximize" for d in config.directions], sampler=sampler)
        self.distributions = {
            name: optuna.distributions.IntDistribution(ABSENT if param.can_knockout else 0, param.size - 1)
            for name, param in self.space.items()}
        first: list[Genome] = []
        for params in [{}, *seeds]:  # the defaults (when every control may be absent), then the seeds
            try:
                genome = self.space.to_genome(params)
            except ConfigError:
                continue
            if genome not in first:
                first.append(genome)
                self.study.enqueue_trial(self._trial_params(genome))
        self._told: dict[Genome, tuple[float, ...] | None] = {}
        self._pending: dict[int, tuple[Any, Genome, Proposal]] = {}
        self._batch = 0
        self._issued = 0
        self._first_batch = FirstBatchCheck(self.sampler_name)

    def ask(self) -> list[Proposal]:
        """The current batch's proposals not told yet; a new batch once all are told; [] once the sampler finds
        nothing new (the loop stops asking when its budget is spent)."""
        if self._pending:
            return [proposal for _, _, proposal in self._pending.values()]
        batch: set[Genome] = set()
        for _ in range(self.config.pool_size):
            if not self._ask_one(batch):  # nothing new in _ASKS trials: the grid is (nearly) all told, the batch
                break  # ends here (no budget of its own ends the asking)
        self._batch += 1
        return [proposal for _, _, proposal in self._pending.values()]

    def _ask_one(self, batch: set[Genome]) -> bool:
        """One new configuration asked of the sampler into `batch` (and pending); False when `_ASKS` trials gave
        none (each told at once: a repeat its score again, a refused or duplicate one as failed)."""
        for _ in range(_ASKS):
            trial = self.study.ask(self.distributions)
            genome = tuple(None if trial.params[n] == ABSENT else trial.params[n] for n in self.space)
            if genome in self._told:  # seen: the sampler hears its score again, the loop nothing
                self._tell_study(trial, self._told[genome])
            elif genome in batch or not self.space.allows(genome):
                self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
            else:
                batch.add(genome)
                proposal = Proposal(id=self._issued, generation=self._batch, params=self.space.to_params(genome))
                self._pending[proposal.id] = (trial, genome, proposal)
                self._issued += 1
                return True
        return False

    def tell(self, proposal: Proposal, scores: tuple[float, ...] | None, reason: str | None = None) -> None:
        entry = self._pending.pop(proposal.id, None)
        if entry is None:
            raise SearchError(f"candidate {proposal.id} was not asked, or was told already")
        trial, genome, _ = entry
        self._told[genome] = scores
        self._tell_study(trial, scores)
        self._first_batch.told(proposal, scores is not None, reason, self._batch == 1 and not self._pending)

    def _tell_study(self, trial: Any, scores: tuple[float, ...] | None) -> None:
        if scores is None:
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, list(scores) if len(scores) > 1 else scores[0])

    def _trial_params(self, genome: Genome) -> dict[str, int]:
        return {name: ABSENT if gene is None else int(gene) for name, gene in zip(self.space, genome, strict=True)}

    def describe(self) -> dict[str, Any]:
        return {
            "engine": f"optuna.{self.sampler_name}",
            "optuna": self._optuna.__version__,
            "search_space": self.space.describe(),
            "seed": self.config.seed,
            "budget": {"generations": self.config.generations, "pool_size": self.config.pool_size,
                       "max_evaluations": self.config.max_evaluations},
        }


@dataclass(frozen=True)
class TpeOptions:
    """TPE's own options (tune --strategy-option KEY=VALUE); its budget is the loop's."""

    pool_size: int = strategy_option(8, "trials asked at once, one batch")
    startup_trials: int | None = strategy_option(None, "trials drawn at random before TPE models; default the pool "
                                                       "size (the first batch, as the GA's first generation)")


@dataclass(frozen=True)
class Nsga2Options:
    """NSGA-II's own options (tune --strategy-option KEY=VALUE); its budget is the loop's."""

    pool_size: int = strategy_option(8, "the population, asked at once as one batch")


class TpeStrategy:
    """`--strategy tpe`: Optuna's tree-structured Parzen estimator (one or several objectives)."""

    name = "tpe"
    spaces = frozenset({GRID})
    takes_seeds = True
    options = TpeOptions

    def make(self, request: SearchRequest) -> OptunaSource:
        own = request.options if isinstance(request.options, TpeOptions) else TpeOptions(request.config.pool_size)
        if own.startup_trials is not None and own.startup_trials < 0:
            raise ConfigError(f"--strategy-option startup_trials must be at least 0, not {own.startup_trials}")

        def sampler(optuna: Any, config: SearchConfiguration) -> Any:
            # the first batch is drawn at random, as the GA's first generation; then TPE models what was told
            startup = config.pool_size if own.startup_trials is None else own.startup_trials
            return optuna.samplers.TPESampler(seed=config.seed, n_startup_trials=startup)

        return OptunaSource(as_space(request.space, request.allows), configured(request), list(request.objective_names),
                            "tpe", sampler, request.seed_params)


class Nsga2Strategy:
    """`--strategy nsga2`: Optuna's NSGA-II, its population the pool size."""

    name = "nsga2"
    spaces = frozenset({GRID})
    takes_seeds = True
    options = Nsga2Options

    def make(self, request: SearchRequest) -> OptunaSource:
        def sampler(optuna: Any, config: SearchConfiguration) -> Any:
            return optuna.samplers.NSGAIISampler(seed=config.seed, population_size=config.pool_size)

        return OptunaSource(as_space(request.space, request.allows), configured(request), list(request.objective_names),
                            "nsga2", sampler, request.seed_params)
