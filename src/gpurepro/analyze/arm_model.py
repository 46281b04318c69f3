"""How one arm's trials are drawn in a simulated run (gpurepro.analyze.simulate): the ways its
trials end and their rates, its budget and speed. Below the simulation and the claim kinds,
which read an arm's model to give the chances of their claims (analyze.claim_kinds.chances)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ArmModel", "Cause"]


@dataclass(frozen=True)
class Cause:
    """One way an arm's trials end, and how often."""

    outcome: str  # crashed, hung, cuda_error
    detail: str
    rate: float  # per unit of exposure (inf: at once, exposure 0); per-trial mode: a chance


@dataclass(frozen=True)
class ArmModel:
    """How one arm's trials are drawn."""

    causes: tuple[Cause, ...]
    budget: float  # the exposure a surviving trial reaches
    speed: float  # exposure per second (0: not known)
    seconds: float  # a surviving trial's wall time
    overhead_s: float  # a trial's start and stop, beyond its exposure's time
    strata: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # stratum -> (share of exposure inside it, share of failures that fell inside it)
    # The causes' numbers are chances per trial, not rates: the arm's counter cannot time its
    # failures (a reporter's program that prints its count once a second and crashes within
    # it), so its trials are modelled by how they ended, each within its budget.
    per_trial: bool = False
    # A timed arm's trial times (gpurepro.analyze.timing): the mean and standard deviation of
    # the logarithms of its valid trials' times, each a draw of a log-normal trial time.
    log_time: tuple[float, float] | None = None
    # The launches a timed trial's values are each the mean of (observations.timing.loops):
    # what a run's timed test floors its spread by (gpurepro.analyze.timing).
    loops: int = 1
    # The exposure to the arm's first failure drawn from this crash process
    # (gpurepro.analyze.processes: survival(x), sample(rng)) instead of the causes' competing
    # exponentials; the causes then say only which failure it is, in proportion to their
    # rates. None: the causes' own exponentials (every model from a document).
    process: Any = None

    def rate_of(self, outcomes: Sequence[str], detail: str | None = None) -> float:
        return sum(c.rate for c in self.causes
                   if c.outcome in outcomes and (not detail or detail in c.detail))
