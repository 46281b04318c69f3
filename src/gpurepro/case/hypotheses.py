"""Hypotheses a case declares: what no arm of it isolates, stated in the verdict labelled as
such, and only when the run's decisions are as declared (a hypothesis about an arm that did not
run, or one whose test the run decided, is said differently or not at all). Standard library
only; the decisions are the harness's (gpurepro.analyze.claims).

    Hypothesis("serialising only unloads against launches avoids the crash", label="not run",
               when_run=("one-thread", "serialized"), unless_run=("lock-unload-launch",))

``stated(h, decision)`` gives ``Hypothesis (<label>): <text>`` or None; ``decision`` is a
claim's decision in the run (None: not in the run), e.g. ``Analysis.decision``. A
``Conclusion`` states its ``hypotheses`` so; a verdict function may call ``stated`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Hypothesis", "Said", "by_decision", "stated"]

Decision = Callable[[str], "str | None"]
# A condition: claim -> the decisions it may have ("supported", "contradicted", "not_decided",
# or None for a claim the run does not have).
When = Mapping[str, tuple["str | None", ...]]


def holds(when: When, decision: Decision) -> bool:
    return all(decision(name) in allowed for name, allowed in when.items())


@dataclass(frozen=True)
class Said:
    """A sentence added where ``when`` holds (Hypothesis.then)."""
    text: str
    when: When = field(default_factory=dict)


@dataclass(frozen=True)
class Hypothesis:
    """``text``: the hypothesis; ``label``: why it is one (no arm isolates it, confounded, not
    run, ...). Stated only where ``when`` holds, at least one claim of ``when_run`` is in the
    run (when given) and none of ``unless_run`` is. ``predictions``: the claims that test its
    predictions, listed after it by decision; ``then``: sentences added where theirs hold."""
    text: str
    label: str = "no arm isolates it"
    when: When = field(default_factory=dict)
    when_run: tuple[str, ...] = ()
    unless_run: tuple[str, ...] = ()
    predictions: tuple[str, ...] = ()
    then: tuple[Said, ...] = ()

    def claims(self) -> tuple[str, ...]:
        """Every claim it names, in the order declared."""
        return tuple(dict.fromkeys((*self.when, *self.when_run, *self.unless_run,
                                    *self.predictions, *(n for s in self.then for n in s.when))))


def by_decision(names: tuple[str, ...], decision: Decision) -> str:
    """``supported a, b; contradicted none; not decided c`` over the claims ``names``."""
    def named(v: str) -> str:
        return ", ".join(n for n in names if decision(n) == v) or "none"
    return (f"supported {named('supported')}; contradicted {named('contradicted')}; not decided "
            f"{named('not_decided')}")


def stated(h: Hypothesis, decision: Decision) -> str | None:
    """The hypothesis as the verdict states it in this run, or None where it is not stated."""
    if not holds(h.when, decision):
        return None
    if h.when_run and all(decision(n) is None for n in h.when_run):
        return None
    if any(decision(n) is not None for n in h.unless_run):
        return None
    text = f"Hypothesis ({h.label}): {h.text}"
    if h.predictions:
        text += f" Its predictions, as claims of this run: {by_decision(h.predictions, decision)}."
    return text + "".join(f" {s.text}" for s in h.then if holds(s.when, decision))
