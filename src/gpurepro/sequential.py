"""Sequential stopping (--until-decided): stop an arm once its comparison is decided.

Method (declared in the result document): a group-sequential design with a pre-declared
schedule of looks. Each arm is compared with the baseline when its count of valid trials
reaches a look (by the exact conditional test of failure rates per exposure when exposure is
recorded, as the verdicts are; by Fisher's exact test on trials otherwise) (every ``step`` trials, up to ``max_trials``); with L
looks, each look tests at alpha / L (Bonferroni split), so the chance of any false "decided"
over all looks stays at or under alpha whatever the stopping does. An arm also stops for
futility when even the most extreme remaining outcomes could not reach significance; stopping
for futility can only lower the false-decision rate. The baseline runs while any other arm is
still undecided. tests/test_sequential.py checks the error rate by simulation.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy import stats

from .stats import EVIDENCE


@dataclass
class Design:
    alpha: float = 0.05
    step: int = 5
    max_trials: int = 25

    @property
    def looks(self) -> list[int]:
        """Every ``step`` valid trials, and always at ``max_trials`` (the last look)."""
        looks = list(range(self.step, self.max_trials, self.step))
        return [*looks, self.max_trials]

    @classmethod
    def from_description(cls, described: Mapping[str, Any]) -> Design:
        """The design a journal or document recorded (a resumed run continues it)."""
        return cls(alpha=float(described["alpha"]), step=int(described["step"]),
                   max_trials=int(described["max_trials"]))

    @property
    def alpha_per_look(self) -> float:
        return self.alpha / len(self.looks)

    def describe(self) -> dict[str, Any]:
        return {"method": ("group-sequential: at each pre-declared look, the exact conditional rate test "
                           "(Fisher's exact test where no exposure is recorded) at a Bonferroni-split "
                           "alpha; futility stop in the Fisher mode"),
                "alpha": self.alpha, "step": self.step, "max_trials": self.max_trials,
                "looks": self.looks, "alpha_per_look": self.alpha_per_look}


def _counts(records: Sequence[Mapping[str, Any]], arm: str, failure_outcomes: Sequence[str]) -> tuple[int, int, float]:
    """Failures, valid trials and total exposure of one arm."""
    k = n = 0
    exposure = 0.0
    for r in records:
        if r["arm"] != arm:
            continue
        if r["outcome"] in EVIDENCE:
            n += 1
            k += int(r["outcome"] in failure_outcomes)
            exposure += float(r.get("exposure") or 0)
    return k, n, exposure


def _p(k1: int, n1: int, k0: int, n0: int) -> float:
    return float(stats.fisher_exact([[k1, n1 - k1], [k0, n0 - k0]]).pvalue)


def _rate_p(k1: int, e1: float, k0: int, e0: float) -> float:
    if k1 + k0 == 0:
        return 1.0
    return float(stats.binomtest(k1, k1 + k0, p=e1 / (e1 + e0)).pvalue)


def futile(k1: int, n1: int, k0: int, n0: int, design: Design) -> bool:
    """True when no completion of this arm up to max_trials could reach significance
    against the baseline as it stands (extremes: all further trials fail, or none do)."""
    left = design.max_trials - n1
    if left <= 0:
        return True
    best = min(_p(k1 + left, n1 + left, k0, n0), _p(k1, n1 + left, k0, n0))
    return best >= design.alpha_per_look


@dataclass
class Sequential:
    design: Design
    baseline: str
    arms: Sequence[str]
    failure_outcomes: Sequence[str]
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    _looked: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def update(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Take every look that the arms' current counts have reached."""
        k0, n0, e0 = _counts(records, self.baseline, self.failure_outcomes)
        for arm in self.arms:
            if arm == self.baseline or arm in self.decisions:
                continue
            k1, n1, e1 = _counts(records, arm, self.failure_outcomes)
            due = [look for look in self.design.looks if look <= n1 and look > self._looked.get(arm, 0)]
            if not due or n0 == 0:
                continue
            self._looked[arm] = due[-1]
            # With exposure recorded, decide on the same test the verdicts use: failures per
            # unit of exposure (exact conditional test), so an arm that merely survived a
            # short budget is not "decided". Without exposure: Fisher on trials.
            by_rate = e0 > 0 and e1 > 0
            if by_rate:
                p = _rate_p(k1, e1, k0, e0)
            else:
                p = _p(k1, n1, k0, n0)
            if p < self.design.alpha_per_look:
                self.decisions[arm] = {"decision": "differs", "at_trials": n1, "baseline_trials": n0,
                                       "p_value": p, "threshold": self.design.alpha_per_look,
                                       "test": "rate" if by_rate else "fisher"}
            elif not by_rate and futile(k1, n1, k0, n0, self.design):
                self.decisions[arm] = {"decision": "futile", "at_trials": n1, "baseline_trials": n0,
                                       "p_value": p, "threshold": self.design.alpha_per_look}

    def still_needed(self, arm: str, records: Sequence[Mapping[str, Any]]) -> bool:
        with self._lock:
            self.update(records)
            _, n, _ = _counts(records, arm, self.failure_outcomes)
            if n >= self.design.max_trials:
                return False
            if arm == self.baseline:
                return any(a not in self.decisions for a in self.arms if a != self.baseline)
            return arm not in self.decisions

    def to_json(self) -> dict[str, Any]:
        return {**self.design.describe(), "decisions": dict(self.decisions),
                "looked": dict(self._looked)}

    def restore(self, journaled: Mapping[str, Any] | None) -> None:
        """Continue from the decisions and looks a journal recorded before an interruption."""
        if journaled:
            self.decisions.update(journaled.get("decisions") or {})
            self._looked.update(journaled.get("looked") or {})


def simulate_false_decision_rate(p: float, design: Design, runs: int, seed: int = 0,
                                 with_exposure: bool = False) -> float:
    """Fraction of simulated runs (one arm and a baseline, same failure process) in which the
    arm is wrongly decided to differ. Without exposure each trial fails with probability p;
    with exposure, failures come at a constant rate and a trial is censored at its budget
    (1 unit), chosen so that it fails before the budget with probability p."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rate = -np.log(1 - p) if p < 1 else 10.0
    false = 0
    for _ in range(runs):
        seq = Sequential(design, "base", ["arm", "base"], ("crashed",))
        records: list[dict[str, Any]] = []
        # Interleave as the scheduler does: one trial of each arm in turn while needed.
        for _i in range(design.max_trials):
            for name in ("base", "arm"):
                if seq.still_needed(name, records):
                    t = rng.exponential(1 / rate)
                    rec: dict[str, Any] = {"arm": name, "outcome": "crashed" if t < 1 else "survived"}
                    if with_exposure:
                        rec["exposure"] = min(t, 1.0)
                    records.append(rec)
        seq.update(records)
        if seq.decisions.get("arm", {}).get("decision") == "differs":
            false += 1
    return false / runs
