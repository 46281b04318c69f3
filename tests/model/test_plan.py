"""The plan: every arm's trials, seeded, shuffled within blocks of one replicate per arm."""

from __future__ import annotations

from collections import Counter

from gpurepro.model.plan import make_plan

ARMS = {a: {} for a in ("base", "a", "b", "c")}


def test_arms_stay_in_step_block_by_block():
    plan = make_plan("x", ARMS, 5, seed=7)
    for k in range(1, 6):
        prefix = Counter(t.arm for t in plan.order[: 4 * k])
        assert set(prefix.values()) == {k}, prefix


def test_the_order_within_blocks_is_shuffled_and_seeded():
    first = [t.arm for t in make_plan("x", ARMS, 6, seed=1).order]
    assert first == [t.arm for t in make_plan("x", ARMS, 6, seed=1).order]
    blocks = {tuple(first[i:i + 4]) for i in range(0, 24, 4)}
    assert len(blocks) > 1  # not the same order in every block


def test_unequal_trials_per_arm_are_all_planned():
    plan = make_plan("x", ARMS, {"base": 4, "a": 2, "b": 1, "c": 3}, seed=2)
    assert Counter(t.arm for t in plan.order) == {"base": 4, "a": 2, "b": 1, "c": 3}
    assert [t.index for t in plan.order] == list(range(10))
