"""Targets tuned together on one Ray cluster: the GPU share's rule, the split of compile slots, the child's command
line. No Ray here (the rule is plain Python, its clock passed in); the real runs are in tests/ray/test_ray_executor.py."""

from __future__ import annotations

import pytest

from ciq_build.errors import ConfigError
from ciq_build.ray.gpu_share import FairShare, TargetShare, share_table
from ciq_build.ray.targets import compile_cpus, gpu_capacity, plan_slots

# -- the rule: least GPU-seconds first, ties by wait, capacity, reuse, dead holders -----------------


def test_a_free_gpu_goes_to_the_waiting_target_that_has_used_the_fewest_gpu_seconds() -> None:
    share = FairShare(1)
    long_one, granted = share.ask("long", "a0", "ray-0", now=0.0)
    assert granted == [long_one]
    share.release(long_one, now=3.0)  # long: 3 GPU-seconds
    short_one, _ = share.ask("short", "b0", "ray-0", now=3.0)
    share.release(short_one, now=4.0)  # short: 1
    # Both wait; long asked first, but short has used less: short is granted when the GPU frees.
    busy, _ = share.ask("other", "c0", "ray-0", now=4.0)
    long_two, _ = share.ask("long", "a0", "ray-0", now=4.5)
    short_two, _ = share.ask("short", "b0", "ray-0", now=5.0)
    assert share.release(busy, now=6.0) == [short_two]
    assert not share.is_granted(long_two)
    assert share.used("short", 6.5) == pytest.approx(1.5)  # a held grant counts as it runs


def test_between_targets_that_have_used_the_same_the_one_waiting_longest_wins() -> None:
    share = FairShare(1)
    busy, _ = share.ask("x", "h", "w", now=0.0)
    later, _ = share.ask("b", "h2", "w", now=2.0)
    earlier, _ = share.ask("a", "h1", "w", now=1.0)
    assert share.release(busy, now=3.0) == [earlier]
    assert share.release(earlier, now=4.0) == [later]


def test_no_more_grants_than_gpus_and_a_released_grant_is_reused() -> None:
    share = FairShare(2)
    first, granted_first = share.ask("a", "h1", "w", now=0.0)
    second, granted_second = share.ask("b", "h2", "w", now=0.0)
    third, granted_third = share.ask("c", "h3", "w", now=0.0)
    assert granted_first == [first] and granted_second == [second] and granted_third == []
    assert share.release(first, now=1.0) == [third]
    assert share.release(first, now=1.5) == []  # given back twice: nothing changes
    assert [s.benchmarks for s in share.shares()] == [1, 1, 1]


def test_a_dead_holders_grants_and_requests_are_reclaimed_and_go_to_the_others() -> None:
    share = FairShare(1)
    held, _ = share.ask("a", "dead", "ray-0", now=0.0)
    queued, _ = share.ask("a", "dead", "ray-1", now=0.5)
    other, _ = share.ask("b", "alive", "ray-0", now=1.0)
    assert share.holders() == {"dead", "alive"}
    assert share.drop_holder("dead", now=2.0) == [other]
    assert share.log[held].reclaimed and share.log[queued].reclaimed and not share.is_granted(queued)
    assert share.holders() == {"alive"}
    assert share.used("a", 10.0) == pytest.approx(2.0)  # its grant counts up to the reclaim, no further


def test_a_request_withdrawn_before_its_grant_frees_nothing_and_is_not_a_benchmark() -> None:
    share = FairShare(1)
    held, _ = share.ask("a", "h1", "w", now=0.0)
    waiting, _ = share.ask("b", "h2", "w", now=1.0)
    assert share.release(waiting, now=2.0) == []
    assert share.shares() == [TargetShare("a", 1, 0.0, 0.0), TargetShare("b", 0, 0.0, 1.0)]
    assert share.release(held, now=4.0) == []


def test_the_share_table_says_each_targets_benchmarks_gpu_seconds_percent_and_longest_wait() -> None:
    table = share_table([TargetShare("timer", 4, 1.0, 2.5), TargetShare("slow_timer", 4, 3.0, 0.0)], 1)
    assert table.splitlines()[1:] == [
        "  timer       4 benchmark(s), 1.0 GPU-s (25%), longest wait for a GPU 2.5 s",
        "  slow_timer  4 benchmark(s), 3.0 GPU-s (75%), longest wait for a GPU 0.0 s"]


# -- compile slots: split, never more actors than CPUs ---------------------------------------------


def test_targets_whose_jobs_exceed_the_cpus_get_an_equal_part_each_said_in_one_line() -> None:
    assert plan_slots(2, 2, None, 4.0).note is None
    split = plan_slots(3, 4, None, 8.0)
    assert (split.together, split.jobs) == (3, 2)
    assert split.note is not None and "need 12 CPUs" in split.note and "each with --jobs 2" in split.note
    fewer = plan_slots(5, 1, None, 3.0)  # not even one slot each: 3 at once, the rest as they end
    assert (fewer.together, fewer.jobs) == (3, 1) and fewer.note is not None and "3 of them at once" in fewer.note
    assert plan_slots(5, 2, 2, 4.0) == plan_slots(2, 2, None, 4.0)  # --ray-targets 2
    with pytest.raises(ConfigError, match="0 CPU"):
        plan_slots(2, 1, None, 0.0)


def test_the_cluster_resources_that_bound_compiles_and_benchmarks() -> None:
    resources = {"CPU": 16.0, "GPU": 8.0, "H200": 4.0, "compile": 6.0}
    assert compile_cpus(resources, None) == 16.0 and compile_cpus(resources, "compile") == 6.0
    assert gpu_capacity(resources, None) == 8 and gpu_capacity(resources, "H200") == 4
    assert gpu_capacity({"CPU": 2.0}, None) == 0
