"""Hypotheses a case declares: what no arm of it isolates, stated in the verdict labelled as
such, and only when the run's decisions are as declared (a hypothesis about an arm that did not
run, or one whose test the run decided, is said differently or not at all). One type for both
ways a case declares its verdict: ``Conclusion.hypotheses`` and ``Declared.hypotheses``
(gpurepro.case.declared). Standard library only; the decisions are the harness's
(gpurepro.analyze.claims).

    Hypothesis("serialising only unloads against launches avoids the crash", label="not run",
               when_run=("one-thread", "serialized"), unless_run=("lock-unload-launch",))

A ``Condition`` maps a claim to the decision it must have in the run: ``"supported"``,
``"contradicted"``, ``"not_decided"``, ``"absent"`` (the claim is not in the run), a tuple of
them, or ``"!supported"``: any but that one (absent included).

``stated(h, decision)`` gives ``Hypothesis (<label>): <text>`` or None; ``decision`` is a
claim's decision in the run (None: not in the run), e.g. ``Analysis.decision``. A
``Conclusion`` states its ``hypotheses`` so, as does a declared verdict; a verdict function may
call ``stated`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Condition", "Decision", "Hypothesis", "Said", "by_decision", "holds", "stated"]

Decision = Callable[[str], "str | None"]
Condition = Mapping[str, str | tuple[str, ...]]


def decided(decision: Decision, name: str) -> str:
    """A claim's decision, ``"absent"`` where the run does not have it."""
    return decision(name) or "absent"


def holds(when: Condition, decision: Decision) -> bool:
    """Every claim of ``when`` has a decision it allows ("!x": any but x)."""
    for name, wanted in when.items():
        got = decided(decision, name)
        if isinstance(wanted, str) and wanted.startswith("!"):
            if got == wanted[1:]:
                return False
        elif got not in ((wanted,) if isinstance(wanted, str) else wanted):
            return False
    return True


@dataclass(frozen=True)
class Said:
    """A sentence added where ``when`` holds (Hypothesis.then)."""
    text: str
    when: Condition = field(default_factory=dict)


@dataclass(frozen=True)
class Hypothesis:
    """``text``: the hypothesis; ``label``: why it is one (no arm isolates it, confounded, not
    run, ...; empty: ``Hypothesis: <text>``). Stated only where ``when`` holds, at least one
    claim of ``when_run`` is in the run (when given), none of ``unless_run`` is, and each group
    of ``any_of`` has a supported claim. ``{named}`` in the text: the arms of the supported
    claims of ``names``. ``consistent``/``against``: phrases added where their condition holds
    ("; consistent with it, A and B", "; against it, C"), then a period where the text has
    none. ``predictions``: the claims that test its predictions, listed after it by decision;
    ``then``: sentences added where theirs hold."""
    text: str
    label: str = "no arm isolates it"
    when: Condition = field(default_factory=dict)
    when_run: tuple[str, ...] = ()
    unless_run: tuple[str, ...] = ()
    any_of: tuple[tuple[str, ...], ...] = ()
    names: tuple[str, ...] = ()
    consistent: tuple[tuple[Condition, str], ...] = ()
    against: tuple[tuple[Condition, str], ...] = ()
    predictions: tuple[str, ...] = ()
    then: tuple[Said, ...] = ()

    def claims(self) -> tuple[str, ...]:
        """Every claim it names, in the order declared."""
        return tuple(dict.fromkeys((
            *self.when, *self.when_run, *self.unless_run, *(n for g in self.any_of for n in g),
            *self.names, *(n for c, _ in (*self.consistent, *self.against) for n in c),
            *self.predictions, *(n for s in self.then for n in s.when))))


def by_decision(names: tuple[str, ...], decision: Decision) -> str:
    """``supported a, b; contradicted none; not decided c`` over the claims ``names``."""
    def named(v: str) -> str:
        return ", ".join(n for n in names if decision(n) == v) or "none"
    return (f"supported {named('supported')}; contradicted {named('contradicted')}; not decided "
            f"{named('not_decided')}")


def stated(h: Hypothesis, decision: Decision,
           arms: Mapping[str, str] | None = None) -> str | None:
    """The hypothesis as the verdict states it in this run, or None where it is not stated.
    ``arms``: claim -> its arm, for ``{named}``."""
    if not holds(h.when, decision):
        return None
    if h.when_run and all(decision(n) is None for n in h.when_run):
        return None
    if any(decision(n) is not None for n in h.unless_run):
        return None
    if not all(any(decision(n) == "supported" for n in group) for group in h.any_of):
        return None
    named = ", ".join((arms or {}).get(n, n) for n in h.names if decision(n) == "supported")
    text = (f"Hypothesis ({h.label}): " if h.label else "Hypothesis: ") + h.text.format(named=named)
    pro = [p for cond, p in h.consistent if holds(cond, decision)]
    con = [p for cond, p in h.against if holds(cond, decision)]
    text += (f"; consistent with it, {' and '.join(pro)}" if pro else "") + (
        f"; against it, {' and '.join(con)}" if con else "")
    text += "" if text.endswith(".") else "."
    if h.predictions:
        text += f" Its predictions, as claims of this run: {by_decision(h.predictions, decision)}."
    return text + "".join(f" {s.text}" for s in h.then if holds(s.when, decision))
