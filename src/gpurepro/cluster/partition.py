"""Sharding: which partition, and which array task of it, runs which planned trial.

A partition is a kind of node and an array task one node for one stretch of time; neither may
line up with an arm, or a difference between nodes or hours would read as a difference
between arms. So each arm's trials are dealt over the partitions in turn (replicate r of the
arm at position a goes to partition (a + r) mod P), and within a partition over the tasks in
turn, each arm starting at another task. Every partition and every task then runs every arm
in about equal numbers, and a task runs its share in plan order (randomized blocks), so tasks
running at the same time keep the arms in step as a single host's workers do.

Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from ..model.plan import Plan


def by_partition(plan: Plan, partitions: Sequence[str],
                 only: Collection[int] | None = None) -> dict[str, list[int]]:
    """Trial indices per partition, in plan order; ``only``: these indices alone."""
    arms = list(plan.arms)
    out: dict[str, list[int]] = {p: [] for p in partitions}
    for t in plan.order:
        if only is not None and t.index not in only:
            continue
        out[partitions[(arms.index(t.arm) + t.rep) % len(partitions)]].append(t.index)
    return out


def to_tasks(plan: Plan, indices: Sequence[int], tasks: int) -> list[list[int]]:
    """``indices`` (in plan order) dealt to at most ``tasks`` array tasks; no task is empty."""
    n = max(1, min(tasks, len(indices)))
    arms = list(plan.arms)
    arm_of = {t.index: t.arm for t in plan.order}
    dealt: Counter[str] = Counter()
    out: list[list[int]] = [[] for _ in range(n)]
    for i in indices:
        arm = arm_of[i]
        out[(arms.index(arm) + dealt[arm]) % n].append(i)
        dealt[arm] += 1
    return [share for share in out if share]
