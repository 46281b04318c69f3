"""The run's design: how its claims are decided as its trials come in. Standard library only.

The defaults here are defined once, for the command line that asks for a design and for the
analysis that re-reads one from a journal (gpurepro.analyze.claims, calibrate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import JournalError
from .jsontypes import JSONObject, JSONValue

# What other modules use; the rest is this module's own.
__all__ = [
    "ANALYSIS_VERSION", "AUTO_HORIZON", "DECISIVE", "DEFAULT_ALPHA", "DEFAULT_LOOK_EVERY",
    "DEFAULT_MAX_TRIALS", "DEFAULT_SPENDING", "DEFAULT_SUPPORTED_SHARE", "DesignSpec",
    "EVENT_RESOLUTION_S", "FIXED", "KINDS", "RunDesign", "SPENDINGS", "TIMED_TEST"
]

# The sequential design's defaults (--max-trials, --look-every, --alpha), defined once for the
# flags that ask for one (the command line) and for the analysis that re-reads a design
# (claims, calibrate).
DEFAULT_MAX_TRIALS, DEFAULT_LOOK_EVERY, DEFAULT_ALPHA = 25, 5, 0.05
# How the decisive design spends alpha over its later looks (analyze.claims.DecisiveDesign):
# new runs halve it look by look; "even", an equal part at each, is what a journal that names
# no spending ran.
SPENDINGS = ("halving", "even")
DEFAULT_SPENDING = "halving"
# The share of each claim's level its stated direction gets in a new decisive run (the rest to
# the opposite; analyze.claims): 0.5 is a two-sided p, what a journal that names none ran.
DEFAULT_SUPPORTED_SHARE = 0.9
# How a new run's claims are decided and stated, journaled as ``options.analysis``: 2 states a
# decision that rests on one trial of an arm, and labels the intervals of a sequential design's
# claims as not adjusted for the look it stopped at (gpurepro.analyze.claims.Wording); a journal
# without it (1) is worded as it was.
ANALYSIS_VERSION = 2
# The resolution of the elapsed time between two CUDA events (cudaEventElapsedTime: "around 0.5
# microseconds"), with which a new run of a case with timed claims journals its timed test
# (``options.timing``: paired by block, the spread floored by it; gpurepro.analyze.timing).
EVENT_RESOLUTION_S = 5e-7
TIMED_TEST = {"resolution_s": EVENT_RESOLUTION_S, "test": "paired"}

FIXED, UNTIL_DECIDED, DECISIVE = "fixed", "until_decided", "decisive"
KINDS = (FIXED, UNTIL_DECIDED, DECISIVE)
# The horizon a new decisive run asks for: chosen from the committed trials ("auto", the
# default), the constant-rate test ("none"), or a number given with --horizon.
AUTO_HORIZON, NO_HORIZON = "auto", "none"


@dataclass(frozen=True)
class DesignSpec:
    """How a run decides its claims: what the command line asks for, what the run's start
    fixes (the decisive design's looks and priors) and journals as ``options.stopping``, and
    what the decider re-reads from the journal (gpurepro.analyze.claims.Design).

    ``kind`` is ``fixed`` (one look at the end: the journal holds no design, ``null``),
    ``until_decided`` (a look each ``step`` trials of the slowest arm still needed, up to
    ``max_trials``) or ``decisive`` (looks at trial counts from ``first_look`` to ``total``,
    ``growth`` apart, ``first_share`` of alpha at the first and the rest spent by
    ``spending``; trials allocated by the arms' ``priors``, the main question's claims
    ``first``). ``described`` keeps what the design says of itself (its method, each look's
    alpha, where its priors came from), as journaled: ``from_json(d).to_json() == d`` for
    every journaled design, key for key and in the same order."""

    kind: str
    alpha: float = DEFAULT_ALPHA
    max_trials: int | None = None
    step: int | None = None
    # None: what a journal that names none ran (the even split; "even"), not journaled.
    spending: str | None = None
    supported_share: float | None = None
    # A request: AUTO_HORIZON, NO_HORIZON or a number; a journaled design: a number or None.
    horizon: float | str | None = None
    first_look: int | None = None
    total: int | None = None
    first_share: float | None = None
    growth: float | None = None
    priors: Mapping[str, JSONObject] | None = None  # arm -> its prior (analyze.allocate.ArmPrior)
    priors_from: tuple[str, ...] | None = None
    first: tuple[str, ...] | None = None
    described: Mapping[str, JSONValue] = field(default_factory=dict)
    keys: tuple[str, ...] = ()  # the journaled keys in their order; () for a design made here

    @property
    def sequential(self) -> bool:
        """Whether the run looks before its end (a design is journaled)."""
        return self.kind != FIXED

    @property
    def decisive(self) -> bool:
        return self.kind == DECISIVE

    @property
    def planned(self) -> bool:
        """Whether the run's start fixed what the design needs to look: a decisive design as
        asked for (no looks yet) is what a run on a device that cannot run the case journals,
        since nothing is planned for trials that never run (analyze.designing.designer)."""
        return not self.decisive or (self.first_look is not None and self.total is not None)

    @classmethod
    def fixed(cls, alpha: float = DEFAULT_ALPHA) -> DesignSpec:
        return cls(FIXED, alpha)

    @classmethod
    def until_decided(cls, alpha: float, step: int, max_trials: int) -> DesignSpec:
        return cls(UNTIL_DECIDED, alpha, max_trials=max_trials, step=step)

    @classmethod
    def decisive_request(cls, alpha: float, max_trials: int, spending: str,
                         supported_share: float, horizon: float | str) -> DesignSpec:
        """The decisive design as the command line asks for it; the run's start fixes its
        looks and priors (gpurepro.analyze.planning.plan_decisive)."""
        return cls(DECISIVE, alpha, max_trials=max_trials, spending=spending,
                   supported_share=supported_share, horizon=horizon)

    def with_alpha(self, alpha: float) -> DesignSpec:
        return replace(self, alpha=alpha)

    def to_json(self) -> JSONObject | None:
        """The design as the journal keeps it (``options.stopping``); None for a fixed-size run."""
        if self.kind == FIXED:
            return None
        typed: JSONObject = {"design": DECISIVE if self.kind == DECISIVE else None,
                             "alpha": self.alpha}
        for key in ("max_trials", "step", "spending", "supported_share", "horizon", "first_look",
                    "total", "first_share", "growth"):
            typed[key] = getattr(self, key)
        typed["priors"] = (None if self.priors is None else
                           {arm: dict(p) for arm, p in self.priors.items()})
        typed["priors_from"] = None if self.priors_from is None else list(self.priors_from)
        typed["first"] = None if self.first is None else list(self.first)
        # The journaled keys first, in their order (a null among them stays null), then what
        # was given here.
        out: JSONObject = {k: typed[k] if k in typed else self.described[k] for k in self.keys
                           if k in typed or k in self.described}
        out.update((k, v) for k, v in typed.items() if v is not None and k not in out)
        out.update((k, v) for k, v in self.described.items() if k not in out)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None, where: str = "options.stopping"
                  ) -> DesignSpec:
        """A journaled design (None: a fixed-size run's, at the default alpha); a value of the
        wrong type is a JournalError naming its key."""
        if d is None:
            return cls.fixed()
        if not isinstance(d, Mapping):
            raise JournalError(f"{where}: a design is a JSON object or null, not "
                               f"{type(d).__name__}")
        kind = d.get("design")
        if kind is not None and kind != DECISIVE:
            raise JournalError(f"{where}.design: {kind!r} is no design (known: {DECISIVE!r}, "
                               f"or none for a design that looks every step trials)")
        # A journal from before claims recorded its looks as a list of trial counts (no step, no
        # max_trials) keeps it in ``described``; analyze.claims.Design reads the looks from it.
        step = _int(d, "step", where)
        max_trials = _int(d, "max_trials", where)
        horizon = d.get("horizon")
        if horizon is not None and not (_number(horizon) or horizon in (AUTO_HORIZON, NO_HORIZON)):
            raise JournalError(f"{where}.horizon: a number, {AUTO_HORIZON!r} or {NO_HORIZON!r}, "
                               f"not {horizon!r}")
        priors = d.get("priors")
        if priors is not None and not (isinstance(priors, Mapping)
                                       and all(isinstance(p, Mapping) for p in priors.values())):
            raise JournalError(f"{where}.priors: an object of arm -> prior, not {priors!r}")
        spending = d.get("spending")
        if spending is not None and spending not in SPENDINGS:
            raise JournalError(f"{where}.spending: one of {', '.join(SPENDINGS)}, not {spending!r}")
        described = {k: v for k, v in d.items() if k not in _TYPED}
        return cls(DECISIVE if kind == DECISIVE else UNTIL_DECIDED,
                   alpha=_alpha(d, where),
                   max_trials=max_trials, step=step, spending=spending,
                   supported_share=_float(d, "supported_share", where),
                   horizon=horizon, first_look=_int(d, "first_look", where),
                   total=_int(d, "total", where), first_share=_float(d, "first_share", where),
                   growth=_float(d, "growth", where),
                   priors=None if priors is None else {a: dict(p) for a, p in priors.items()},
                   priors_from=_names(d, "priors_from", where), first=_names(d, "first", where),
                   described=described, keys=tuple(d))


# The keys DesignSpec reads into its own fields; any other key of a journaled design is kept in
# ``described`` as it was.
_TYPED = frozenset({"design", "alpha", "step", "max_trials", "spending", "supported_share",
                    "horizon", "first_look", "total", "first_share", "growth", "priors",
                    "priors_from", "first"})
def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _float(d: Mapping[str, Any], key: str, where: str) -> float | None:
    """A number as journaled (an int stays an int: it is written back as it was read)."""
    x = d.get(key)
    if x is None:
        return None
    if not _number(x):
        raise JournalError(f"{where}.{key}: a finite number, not {x!r}")
    return x if isinstance(x, int) else float(x)


def _alpha(d: Mapping[str, Any], where: str) -> float:
    alpha = _float(d, "alpha", where)
    if alpha is None or not 0 < alpha < 1:
        raise JournalError(f"{where}.alpha: a level between 0 and 1, not {d.get('alpha')!r}")
    return alpha


def _int(d: Mapping[str, Any], key: str, where: str) -> int | None:
    x = d.get(key)
    if x is None:
        return None
    if not isinstance(x, int) or isinstance(x, bool):
        raise JournalError(f"{where}.{key}: a whole number, not {x!r}")
    return x


def _names(d: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    x = d.get(key)
    if x is None:
        return None
    if not isinstance(x, list) or not all(isinstance(n, str) for n in x):
        raise JournalError(f"{where}.{key}: a list of names, not {x!r}")
    return tuple(x)


@dataclass(frozen=True)
class RunDesign:
    """A new run's design as the flow hands it to the run stage, fixed before the first trial:
    the design journaled (``options.stopping``), its claim families (``options.families``;
    None for a case without claims, or a device that cannot run it), the case's checked
    declaration of deterministic outcomes (``options.deterministic``; None: it declares
    none) and the lines that say each claim's chance of being decided before the first trial."""

    design: DesignSpec
    families: dict[str, Any] | None = None
    declared: dict[str, Any] | None = None
    lines: tuple[str, ...] = ()
