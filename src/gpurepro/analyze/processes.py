"""Crash processes: the exposure to an arm's first failure, fitted to its censored trials.

A trial of a race runs until its first failure (a crash at the exposure it had reached) or
until it stops (a survivor, right-censored at its exposure). The rate claims' exact conditional
test assumes one constant hazard per unit of exposure, the same in every trial (the
exponential). Each model here is fitted by maximum likelihood to one arm's trials (crashes at
their exposure, survivors censored at theirs; a crash recorded at exposure 0 came within the
first unit of exposure, an interval):

- ``Exponential``: a constant hazard (the Poisson model the rate claims' test assumes);
- ``Weibull``: a hazard that falls (shape below 1) or rises with exposure
  (``scipy.stats.weibull_min``);
- ``Lomax``: an exponential whose rate differs from trial to trial by a gamma frailty
  (``scipy.stats.lomax``: survival (1 + x/scale)^-shape); the exponential is its limit as the
  shape grows;
- ``Crossing``: a constant background rate plus a chance of failing at each crossing of a power
  of two by the exposure counter, for the powers 2^k over the range the trials' exposures span;
  the crossing is a window just below 2^k (``window``, in log2: fixed, not fitted), through
  which the added hazard gives failing there the chance ``chance``; two fitted parameters;
- ``Empirical``: the Kaplan-Meier estimate (``scipy.stats.ecdf`` on ``CensoredData``), for
  resampling; it has no density, so no AIC and no likelihood-ratio test.

Each is a frozen dataclass with ``survival(x)``, ``sample(rng)`` (a numpy Generator; ``inf``:
never fails), ``loglik``, ``n_params`` and ``describe()``. ``checks`` compares them on one arm:
the coefficient of variation of the crash exposures, likelihood-ratio tests of each model
against the exponential, AIC. Pure functions, no printing: the fits use scipy.optimize on
scipy.stats's log densities and survival functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy import integrate, optimize, stats

# What other modules use; the rest is this module's own.
__all__ = [
    "aic", "checks", "Crossing", "cv_p_value", "Empirical", "empirical", "Exponential", "fit",
    "fit_crossing", "fit_exponential", "fit_lomax", "fit_weibull", "likelihood_ratio", "Lomax",
    "ModelChecks", "Observations", "PARAMETRIC", "PROCESSES", "ProcessFitError", "Weibull"
]

# The crossing window: +-0.01 in log2 is the window the power-of-two hypothesis came from
# (cases/tile_unload_race/strata.py); here only its lower half, the counts just below 2^k.
CROSSING_WINDOW = 0.01
MIN_CRASHES = 2  # fewer crashes than this identify no shape
CV_SIMULATIONS = 4000  # draws of the coefficient of variation under the exponential


class ProcessFitError(ValueError):
    """A crash process cannot be fitted to these trials (too few crashes, no exposure)."""


@dataclass(frozen=True)
class Observations:
    """One arm's trials as a censored sample: each trial's exposure, and whether it failed
    there (else it was censored there)."""

    exposure: tuple[float, ...]
    failed: tuple[bool, ...]

    def __post_init__(self) -> None:
        if len(self.exposure) != len(self.failed):
            raise ValueError("Observations: one failed flag per exposure")
        if any(not math.isfinite(x) or x < 0 for x in self.exposure):
            raise ValueError("Observations: exposures must be finite and at least 0")

    @classmethod
    def of(cls, trials: Sequence[Mapping[str, Any]], failures: Sequence[str],
           evidence: Sequence[str] | None = None) -> Observations:
        """From result-document trials (one arm's): a trial ending as one of ``failures`` failed
        at its exposure; any other outcome among ``evidence`` (default: every trial) is censored
        at its own."""
        ts = [t for t in trials if evidence is None or t.get("outcome") in evidence]
        return cls(tuple(float(t.get("exposure") or 0) for t in ts),
                   tuple(t.get("outcome") in failures for t in ts))

    @property
    def x(self) -> np.ndarray:
        return np.asarray(self.exposure, dtype=float)

    @property
    def d(self) -> np.ndarray:
        return np.asarray(self.failed, dtype=bool)

    @property
    def crashes(self) -> int:
        return int(sum(self.failed))

    def censored_data(self) -> stats.CensoredData:
        x, d = self.x, self.d
        return stats.CensoredData(uncensored=x[d], right=x[~d])


def loglik_of(obs: Observations, logpdf: Any, logsf: Any) -> float:
    """The censored log-likelihood: log density at each failure with exposure above 0, log of
    the chance of failing within the first unit for a failure recorded at 0, log survival at
    each censored exposure."""
    x, d = obs.x, obs.d
    at = d & (x > 0)
    zero = d & (x <= 0)
    total = float(np.sum(logpdf(x[at]))) + float(np.sum(logsf(x[~d])))
    if zero.any():
        total += float(zero.sum()) * math.log(max(-math.expm1(float(logsf(np.array([1.0]))[0])),
                                                  1e-300))
    return total


class Process(Protocol):
    """What every crash process offers (the dataclasses below)."""

    @property
    def name(self) -> str: ...
    @property
    def loglik(self) -> float: ...
    @property
    def n_params(self) -> int: ...
    def survival(self, x: Any) -> Any: ...
    def sample(self, rng: Any) -> float: ...
    def expected_min(self, b: float) -> float: ...
    def describe(self) -> dict[str, Any]: ...


def _expected_min(process: Any, b: float, points: Sequence[float] = ()) -> float:
    """E[min(X, b)] = integral of the survival from 0 to b."""
    if b <= 0:
        return 0.0
    inside = sorted(p for p in points if 0 < p < b)
    value, _ = integrate.quad(lambda t: float(process.survival(t)), 0.0, b,
                              points=inside or None, limit=max(200, 4 * len(inside)))
    return float(value)


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _out(value: np.ndarray, x: Any) -> Any:
    return float(value) if np.ndim(x) == 0 else value


@dataclass(frozen=True)
class Exponential:
    """A constant hazard ``rate`` per unit of exposure."""

    rate: float
    loglik: float = math.nan
    name: str = "exponential"
    n_params: int = 1

    def survival(self, x: Any) -> Any:
        return _out(np.exp(-self.rate * _arr(x)), x)

    def sample(self, rng: Any) -> float:
        return float(rng.exponential(1 / self.rate)) if self.rate > 0 else math.inf

    def expected_min(self, b: float) -> float:
        return -math.expm1(-self.rate * b) / self.rate if self.rate > 0 else b

    def describe(self) -> dict[str, Any]:
        return {"rate": self.rate}


@dataclass(frozen=True)
class Weibull:
    """``scipy.stats.weibull_min(shape, scale=scale)``: survival exp(-(x/scale)^shape)."""

    shape: float
    scale: float
    loglik: float = math.nan
    name: str = "weibull"
    n_params: int = 2

    def survival(self, x: Any) -> Any:
        return _out(stats.weibull_min.sf(_arr(x), self.shape, scale=self.scale), x)

    def sample(self, rng: Any) -> float:
        return float(self.scale * rng.weibull(self.shape))

    def expected_min(self, b: float) -> float:
        return _expected_min(self, b)

    def describe(self) -> dict[str, Any]:
        return {"shape": self.shape, "scale": self.scale}


@dataclass(frozen=True)
class Lomax:
    """An exponential whose rate is gamma-distributed over trials (shape ``shape``, mean rate
    shape / scale): ``scipy.stats.lomax(shape, scale=scale)``, survival (1 + x/scale)^-shape."""

    shape: float
    scale: float
    loglik: float = math.nan
    name: str = "lomax"
    n_params: int = 2

    def survival(self, x: Any) -> Any:
        return _out(np.exp(-self.shape * np.log1p(_arr(x) / self.scale)), x)

    def sample(self, rng: Any) -> float:
        # The frailty: this trial's own rate, then its exponential exposure to failure.
        rate = float(rng.gamma(self.shape, 1 / self.scale))
        return float(rng.exponential(1 / rate)) if rate > 0 else math.inf

    def expected_min(self, b: float) -> float:
        return _expected_min(self, b)

    def describe(self) -> dict[str, Any]:
        return {"shape": self.shape, "scale": self.scale,
                "mean_rate": self.shape / self.scale}


@dataclass(frozen=True)
class Crossing:
    """A background ``rate`` per unit of exposure, plus, at each power 2^k of ``powers``, a
    chance ``chance`` of failing while the counter crosses the window [2^(k - window), 2^k)
    (a constant added hazard inside it, chance = 1 - exp(-its integral)). Past the last power
    only the background rate acts: nothing was seen there."""

    rate: float
    chance: float
    powers: tuple[int, ...]
    window: float = CROSSING_WINDOW
    loglik: float = math.nan
    name: str = "crossing"
    n_params: int = 2

    @property
    def _edges(self) -> tuple[np.ndarray, np.ndarray]:
        k = np.asarray(self.powers, dtype=float)
        return 2.0 ** (k - self.window), 2.0 ** k

    @property
    def _q(self) -> float:
        return -math.log1p(-self.chance) if self.chance < 1 else math.inf

    def cumulative_hazard(self, x: Any) -> Any:
        xs = np.atleast_1d(_arr(x))
        lo, hi = self._edges
        inside = np.clip((xs[:, None] - lo) / (hi - lo), 0.0, 1.0).sum(axis=1)
        out = self.rate * xs + (self._q * inside if self.chance > 0 else 0.0)
        return _out(out[0], x) if np.ndim(x) == 0 else out

    def hazard(self, x: np.ndarray) -> np.ndarray:
        lo, hi = self._edges
        within = (x[:, None] >= lo) & (x[:, None] < hi)
        return np.asarray(self.rate + (within * (self._q / (hi - lo))).sum(axis=1), dtype=float)

    def survival(self, x: Any) -> Any:
        return _out(np.exp(-np.asarray(self.cumulative_hazard(x))), x)

    def sample(self, rng: Any) -> float:
        first = float(rng.exponential(1 / self.rate)) if self.rate > 0 else math.inf
        if self.chance <= 0:
            return first
        q = self._q
        for k in self.powers:
            lo, hi = 2.0 ** (k - self.window), 2.0 ** k
            if lo >= first:
                break
            u = float(rng.random())
            if u < self.chance:  # fails in this window, at its truncated-exponential place
                at = lo + (hi - lo) * (-math.log1p(-u) / q if math.isfinite(q) else 0.0)
                return float(min(first, at))
        return first

    def expected_min(self, b: float) -> float:
        lo, hi = self._edges
        return _expected_min(self, b, [*lo.tolist(), *hi.tolist()])

    def describe(self) -> dict[str, Any]:
        return {"rate": self.rate, "chance": self.chance, "powers": list(self.powers),
                "window_log2": self.window}


@dataclass(frozen=True)
class Empirical:
    """The Kaplan-Meier estimate: the survival ``sf`` after each failure exposure ``times``.
    A draw past the last failure (where the estimate stays above 0) never fails."""

    times: tuple[float, ...]
    sf: tuple[float, ...]
    loglik: float = math.nan  # a discrete likelihood: not comparable with the densities
    name: str = "empirical"
    n_params: int = 0  # one jump per failure exposure: len(times)

    def survival(self, x: Any) -> Any:
        xs = np.atleast_1d(_arr(x))
        i = np.searchsorted(np.asarray(self.times), xs, side="right") - 1
        s = np.where(i >= 0, np.asarray(self.sf)[np.maximum(i, 0)], 1.0)
        return _out(s[0], x) if np.ndim(x) == 0 else s

    def sample(self, rng: Any) -> float:
        u = float(rng.random())
        i = int(np.searchsorted(-np.asarray(self.sf), -u, side="left"))  # first sf <= u
        return float(self.times[i]) if i < len(self.times) else math.inf

    def expected_min(self, b: float) -> float:
        total, last, s = 0.0, 0.0, 1.0
        for t, after in zip(self.times, self.sf, strict=True):
            if t >= b:
                break
            total += s * (t - last)
            last, s = t, after
        return total + s * (b - last)

    def describe(self) -> dict[str, Any]:
        return {"failure_exposures": len(self.times),
                "survival_after_last": self.sf[-1] if self.sf else 1.0}


# ---------------------------------------------------------------- fits


def _need(obs: Observations, what: str) -> None:
    if obs.crashes < MIN_CRASHES:
        raise ProcessFitError(f"{what}: needs at least {MIN_CRASHES} failures, the trials have "
                              f"{obs.crashes}")
    if not np.any(obs.x > 0):
        raise ProcessFitError(f"{what}: the trials record no exposure")


def _minimize(nll: Any, x0: Sequence[float]) -> np.ndarray:
    res = optimize.minimize(nll, np.asarray(x0, dtype=float), method="Nelder-Mead",
                            options={"xatol": 1e-9, "fatol": 1e-10, "maxiter": 20000,
                                     "maxfev": 20000})
    return np.asarray(res.x)


def fit_exponential(obs: Observations) -> Exponential:
    """The constant rate: failures over total exposure (the maximum-likelihood estimate, and
    the rate the rate claims' test uses)."""
    if obs.crashes < 1 or float(obs.x.sum()) <= 0:
        raise ProcessFitError("exponential: needs a failure and some exposure")
    rate = obs.crashes / float(obs.x.sum())
    ll = loglik_of(obs, lambda x: stats.expon.logpdf(x, scale=1 / rate),
                   lambda x: stats.expon.logsf(x, scale=1 / rate))
    return Exponential(rate, ll)


def _start_scale(obs: Observations) -> float:
    return float(obs.x.sum()) / max(obs.crashes, 1)


def fit_weibull(obs: Observations) -> Weibull:
    _need(obs, "weibull")

    def ll(p: np.ndarray) -> float:
        c, s = math.exp(p[0]), math.exp(p[1])
        return loglik_of(obs, lambda x: stats.weibull_min.logpdf(x, c, scale=s),
                         lambda x: stats.weibull_min.logsf(x, c, scale=s))

    p = _minimize(lambda p: -ll(p), [0.0, math.log(_start_scale(obs))])
    return Weibull(math.exp(p[0]), math.exp(p[1]), ll(p))


# A Lomax shape this large is the exponential within numerical noise: the fit stops there.
LOMAX_MAX_SHAPE = 1e6


def fit_lomax(obs: Observations) -> Lomax:
    _need(obs, "lomax")

    # Parametrized by log shape and log mean rate (shape / scale): the exponential is the
    # limit of a large shape at a fixed mean rate, so the optimizer can walk towards it.
    def unpack(p: np.ndarray) -> tuple[float, float]:
        c = math.exp(min(p[0], math.log(LOMAX_MAX_SHAPE)))
        return c, c / math.exp(p[1])

    def ll(p: np.ndarray) -> float:
        c, s = unpack(p)
        return loglik_of(obs, lambda x: stats.lomax.logpdf(x, c, scale=s),
                         lambda x: stats.lomax.logsf(x, c, scale=s))

    rate = 1 / _start_scale(obs)
    best = max((_minimize(lambda p: -ll(p), [math.log(c0), math.log(rate)]) for c0 in (1.0, 50.0)),
               key=ll)
    c, s = unpack(best)
    expo = fit_exponential(obs)
    if ll(best) < expo.loglik:  # the supremum is the exponential limit (an infinite shape)
        return Lomax(LOMAX_MAX_SHAPE, LOMAX_MAX_SHAPE / expo.rate, expo.loglik)
    return Lomax(c, s, ll(best))


def powers_spanned(obs: Observations) -> tuple[int, ...]:
    """The powers of two within the exposures the trials ended at: 2^k from the smallest to
    the largest (both included)."""
    x = obs.x[obs.x > 0]
    if not x.size:
        return ()
    lo, hi = math.ceil(math.log2(float(x.min()))), math.floor(math.log2(float(x.max())))
    return tuple(range(lo, hi + 1))


def fit_crossing(obs: Observations, window: float = CROSSING_WINDOW) -> Crossing:
    _need(obs, "crossing")
    powers = powers_spanned(obs)
    if not powers:
        raise ProcessFitError("crossing: the trials span no power of two")

    def model(p: np.ndarray) -> Crossing:
        return Crossing(math.exp(p[0]), float(1 / (1 + math.exp(-p[1]))), powers, window)

    def ll(p: np.ndarray) -> float:
        m = model(p)
        x, d = obs.x, obs.d
        at = d & (x > 0)
        zero = d & (x <= 0)
        # log hazard at each failure, less the cumulative hazard of every trial (0 at 0)
        total = float(np.sum(np.log(m.hazard(x[at])))) - float(
            np.sum(np.asarray(m.cumulative_hazard(x))))
        if zero.any():
            total += float(zero.sum()) * math.log(max(-math.expm1(-float(m.cumulative_hazard(1.0))),
                                                      1e-300))
        return total

    rate = 1 / _start_scale(obs)
    best = max((_minimize(lambda p: -ll(p), [math.log(rate), logit]) for logit in (-3.0, 0.0)),
               key=ll)
    m = model(best)
    return Crossing(m.rate, m.chance, powers, window, ll(best))


def empirical(obs: Observations) -> Empirical:
    """The Kaplan-Meier estimate of the survival (scipy.stats.ecdf on the censored sample)."""
    if obs.crashes < 1:
        raise ProcessFitError("empirical: needs a failure")
    sf = stats.ecdf(obs.censored_data()).sf
    times, probs = np.asarray(sf.quantiles, dtype=float), np.asarray(sf.probabilities, dtype=float)
    x, d = obs.x, obs.d
    # Keep only the exposures where the estimate drops (a failure there).
    at = np.isin(times, x[d])
    times, probs = times[at], probs[at]
    before = np.concatenate([[1.0], probs[:-1]])
    jumps = {float(t): float(b - a) for t, b, a in zip(times, before, probs, strict=True)}
    ll = float(sum(math.log(max(jumps[float(t)], 1e-300)) for t in x[d]))
    e = Empirical(tuple(times.tolist()), tuple(probs.tolist()))
    ll += float(np.sum(np.log(np.maximum(np.asarray(e.survival(x[~d])), 1e-300)))) if (~d).any() else 0.0
    return Empirical(e.times, e.sf, ll, n_params=len(times))


FITS: dict[str, Callable[[Observations], Process]] = {
    "exponential": fit_exponential, "weibull": fit_weibull, "lomax": fit_lomax,
    "crossing": fit_crossing, "empirical": empirical}
PROCESSES = tuple(FITS)  # every process this module fits, by name
PARAMETRIC = ("exponential", "weibull", "lomax", "crossing")


def fit(obs: Observations, name: str) -> Process:
    """The process ``name`` (one of PROCESSES) fitted to ``obs``."""
    if name not in FITS:
        raise ValueError(f"unknown crash process {name!r} (known: {', '.join(PROCESSES)})")
    fitted: Process = FITS[name](obs)
    return fitted


# ---------------------------------------------------------------- checks


@dataclass(frozen=True)
class LikelihoodRatio:
    """A model against the exponential nested in it: 2 (loglik - loglik_exponential), with
    its p-value (chi-square with 1 degree of freedom; where the exponential lies on the
    boundary of the model's parameters, Lomax's infinite shape or the crossing's chance 0, the
    even mixture of chi-square 0 and 1, half the chi-square's p)."""

    model: str
    statistic: float
    df: int
    boundary: bool
    p_value: float

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "against": "exponential", "statistic": self.statistic,
                "df": self.df, "boundary": self.boundary, "p_value": self.p_value}


@dataclass(frozen=True)
class ModelChecks:
    """One arm's trials against the constant-hazard model."""

    n: int
    failures: int
    cv: float | None  # coefficient of variation (sample sd / mean) of the failure exposures
    cv_p_value: float | None  # P(CV at least this) under the exponential; only uncensored samples
    fits: Mapping[str, Process]
    aic: Mapping[str, float]
    lr: tuple[LikelihoodRatio, ...]
    errors: Mapping[str, str]  # a process that could not be fitted, and why

    @property
    def best(self) -> str | None:
        """The parametric process with the least AIC."""
        return min(self.aic, key=lambda k: self.aic[k]) if self.aic else None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "failures": self.failures, "cv": self.cv,
                "cv_p_value": self.cv_p_value,
                "models": {k: {**p.describe(), "loglik": p.loglik, "n_params": p.n_params,
                               **({"aic": self.aic[k]} if k in self.aic else {})}
                           for k, p in self.fits.items()},
                "likelihood_ratio": [x.to_json() for x in self.lr], "best_aic": self.best,
                **({"not_fitted": dict(self.errors)} if self.errors else {})}


def aic(p: Process) -> float:
    return 2 * p.n_params - 2 * p.loglik


def coefficient_of_variation(obs: Observations) -> float | None:
    x = obs.x[obs.d]
    if x.size < 2 or float(x.mean()) <= 0:
        return None
    return float(np.std(x, ddof=1) / np.mean(x))


def cv_p_value(obs: Observations, rng: Any, simulations: int = CV_SIMULATIONS) -> float | None:
    """The chance that exponential samples of the same size have a coefficient of variation at
    least the observed one (Monte Carlo, ``simulations`` draws; the statistic does not depend
    on the rate). None where any trial was censored: the statistic then depends on where."""
    cv = coefficient_of_variation(obs)
    if cv is None or not all(obs.failed):
        return None
    draws = rng.exponential(1.0, size=(simulations, len(obs.exposure)))
    sims = draws.std(axis=1, ddof=1) / draws.mean(axis=1)
    return float((1 + np.sum(sims >= cv)) / (simulations + 1))


def likelihood_ratio(model: Process, exponential: Exponential) -> LikelihoodRatio:
    stat = max(0.0, 2 * (model.loglik - exponential.loglik))
    boundary = model.name in ("lomax", "crossing")
    p = float(stats.chi2.sf(stat, 1))
    if boundary:
        p = 0.5 * p if stat > 0 else 1.0
    return LikelihoodRatio(model.name, stat, 1, boundary, p)


def checks(obs: Observations, rng: Any = None,
           names: Sequence[str] = PROCESSES) -> ModelChecks:
    """Fit each process of ``names`` to ``obs`` and compare: the coefficient of variation of
    the failure exposures (its Monte Carlo p-value under the exponential with ``rng``), the
    likelihood-ratio test of each parametric model against the exponential, their AIC."""
    fits: dict[str, Process] = {}
    errors: dict[str, str] = {}
    for name in dict.fromkeys(["exponential", *names]):
        try:
            fits[name] = fit(obs, name)
        except ProcessFitError as exc:
            errors[name] = str(exc)
    expo = fits.get("exponential")
    lr = tuple(likelihood_ratio(fits[n], expo) for n in ("weibull", "lomax", "crossing")
               if n in fits and expo is not None and isinstance(expo, Exponential))
    return ModelChecks(
        n=len(obs.exposure), failures=obs.crashes, cv=coefficient_of_variation(obs),
        cv_p_value=cv_p_value(obs, rng) if rng is not None else None,
        fits={n: p for n, p in fits.items() if n in names or n == "exponential"},
        aic={n: aic(p) for n, p in fits.items() if n in PARAMETRIC},
        lr=lr, errors=errors)
