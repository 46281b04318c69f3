"""Plan: arms x trials, shuffled with a recorded seed, in randomized blocks.

Block r holds replicate r of every arm, in a shuffled order; the blocks run one after the
other. Randomizing within blocks keeps order effects (a GPU warming up, a driver cache
filling) from masquerading as arm effects, as a whole-plan shuffle does, and it also keeps the
arms in step: a sequential look taken when the slowest arm reaches k trials finds the others
at k too, not already at their maximum (measured with a whole-plan shuffle on the H200:
arms decided at the first look of 5 trials had run 8 to 10). Standard library only.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class PlannedTrial:
    index: int  # position in the shuffled order; the trial's identity in the journal
    arm: str
    rep: int  # replicate number within its arm, 0-based


@dataclass(frozen=True)
class Plan:
    case: str
    seed: int
    arms: dict[str, dict[str, Any]]  # arm -> full factor assignment
    trials_per_arm: dict[str, int]
    order: tuple[PlannedTrial, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "seed": self.seed,
            "arms": self.arms,
            "trials_per_arm": self.trials_per_arm,
            "order": [asdict(t) for t in self.order],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Plan:
        return cls(
            case=doc["case"],
            seed=int(doc["seed"]),
            arms={k: dict(v) for k, v in doc["arms"].items()},
            trials_per_arm={k: int(v) for k, v in doc["trials_per_arm"].items()},
            order=tuple(PlannedTrial(**t) for t in doc["order"]),
        )


def make_plan(
    case: str,
    arms: Mapping[str, Mapping[str, Any]],
    trials_per_arm: int | Mapping[str, int],
    seed: int | None = None,
    selected: Sequence[str] | None = None,
) -> Plan:
    """Every selected arm gets its trials; the order is a seeded shuffle of all of them."""
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    names = list(selected) if selected else list(arms)
    unknown = [n for n in names if n not in arms]
    if unknown:
        raise ValueError(f"unknown arm(s): {', '.join(unknown)} (known: {', '.join(arms)})")
    if isinstance(trials_per_arm, int):
        counts = {n: trials_per_arm for n in names}
    else:
        counts = {n: int(trials_per_arm[n]) for n in names}
    rng = random.Random(seed)
    slots: list[tuple[str, int]] = []
    for rep in range(max(counts.values(), default=0)):
        block = [(n, rep) for n in names if rep < counts[n]]
        rng.shuffle(block)
        slots += block
    order = tuple(PlannedTrial(i, arm, rep) for i, (arm, rep) in enumerate(slots))
    return Plan(case, seed, {n: dict(arms[n]) for n in names}, counts, order)
