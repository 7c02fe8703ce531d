"""What a tune's builds and benchmarks write into the source tree, watched: left out of the source fingerprint,
journaled, told to the scratch trees, and warned about once when candidates' benchmarks write there."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ciq_build.compiler.controls import Controls
from ciq_build.project.sources import Snapshot, SourceSet, TreeWatch
from ciq_build.project.worker import WorkerTree
from ciq_build.search.evaluation import Evaluation
from ciq_build.tune.cache import EvaluationCache, made_with


class SourceWatch:
    """The source tree of one tune: its fingerprint (`digest`), and the files its builds write there."""

    def __init__(self, source_set: SourceSet, cache: EvaluationCache, say: Callable[[str], None],
                 warn: Callable[[str], None], key_of: Callable[[Controls], str] | None = None,
                 parts: Mapping[str, str] | None = None) -> None:
        self.source_set = source_set
        self.cache = cache
        self.key_of = key_of  # a configuration's key once fingerprinted: what the journal holds of today's is said
        self.parts = parts  # the key's other parts' digests (cache.part_digests): journaled beside the files'
        self.say = say
        self.warn = warn
        self.digest = ""  # the source digest, once the journal says which files the build writes
        # Whether candidates' benchmarks write into the source tree, until one is seen to.
        self._candidates: TreeWatch | None = None

    def snapshot(self) -> Snapshot:
        return self.source_set.snapshot()

    def journaled(self) -> None:
        """What the journal says the build writes into the source tree is left out from the start."""
        self.source_set.excluded |= self.cache.source_outputs

    def fingerprint(self, snapshot: Snapshot) -> None:
        """The source digest of `snapshot` is the tune's from now on; the first says what the journal holds of
        these sources to resume from (EvaluationCache.say_resuming), and what the evaluations from now on are made
        with is journaled, part by part and file by file (a later tune names what changed)."""
        first, self.digest = not self.digest, self.source_set.digest(snapshot)
        now = made_with(self.parts, self.source_set.file_digests(snapshot)) if self.parts is not None else None
        if first and self.key_of is not None:
            self.cache.say_resuming(self.key_of, now)
        if now is not None:
            self.cache.record_made_with(now)

    @property
    def writes_sources(self) -> bool:
        return bool(self.source_set.excluded)

    def note(self, before: Snapshot, after: Snapshot, when: str) -> bool:
        """Leave files the build wrote into the source tree out of the fingerprint; True when some were."""
        written = self.source_set.written_between(before, after) - self.source_set.excluded
        if not written:
            return False
        self.source_set.excluded |= written
        self.cache.record_source_outputs(written)
        shown = ", ".join(sorted(str(p) for p in written)[:5]) + (" ..." if len(written) > 5 else "")
        self.say(f"{when} wrote into the source tree ({shown}); left out of the source fingerprint "
                 "(declare such files as OUTPUT or BYPRODUCTS of their command to say so up front)")
        return True

    def tell(self, *trees: WorkerTree) -> None:
        """Tell the trees whether the project writes into its source tree (seen in this tune or journaled)."""
        for tree in trees:
            tree.writes_sources = self.writes_sources

    def watch_candidates(self) -> None:
        """From now on, what a candidate's benchmark writes into the source tree is looked for."""
        self._candidates = TreeWatch(self.source_set)

    def after_candidate(self, evaluated: Evaluation) -> None:
        """Warn, once, when the source tree changed while candidates ran (a benchmark that writes there).

        Looked at after a benchmarked candidate, within TreeWatch's share of the time; after the warning,
        no more looks.
        """
        watch = self._candidates
        if watch is None or evaluated.runs == 0:  # no benchmark ran: a failed build, the same code as another
            return
        written = watch.look()
        if not written:
            return
        self._candidates = None
        shown = ", ".join(sorted(written)[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
        self.warn(f"warning: the source tree changed while candidates were built and benchmarked (first seen after "
                  f"candidate {evaluated.proposal.id}): {shown}. A benchmark (or build) that writes there can change "
                  "what the next candidate builds and measures; have it write into its working directory (the "
                  "scratch build tree) or elsewhere. Not checked again in this tune.")
