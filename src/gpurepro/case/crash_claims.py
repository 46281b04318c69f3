"""Claims a crash case with a counted exposure declares again and again, with their sentences:
an arm that fails less often than the baseline (or another arm), and an arm that fails at all.
Each returns a plain ``Claim``; the harness decides it (gpurepro.analyze.claims) and fills the
placeholders. Standard library only.

    from gpurepro.case import crash_claims as cc

    cc.fails_less("one-thread", "the same loop in one thread", "Concurrency matters")
    cc.fails_less("lib-cuda", "the library calls on a plain cubin", "Plain cubins crash less",
                  reference="lib")
    cc.fails_at_all("always-unload", "unloading every module")      # claim always-unload-crashes
    cc.rate_against("hold-far")                                      # the rate part of a sentence
"""

from __future__ import annotations

from .model import Claim

__all__ = ["RATIO", "fails_at_all", "fails_less", "rate_against"]

# {ratio_name}: "rate ratio" where a claim is decided on constant rates; where a design with a
# horizon decides it on trials failing before it, the ratio of those shares (analyze.horizon).
RATIO = "{ratio_name} {ratio}, 95% CI {ratio_ci}"


def rate_against(reference: str | None = None, failures: str = "crashes",
                 unit: str = "cycles") -> str:
    """``{count} crashes in {exposure} cycles ({rate}) against the baseline's {reference_rate}``
    (``reference``'s, where the claim's reference is another arm)."""
    whose = f"{reference}'s" if reference else "the baseline's"
    return f"{{count}} {failures} in {{exposure}} {unit} ({{rate}}) against {whose} {{reference_rate}}"


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def fails_less(name: str, what: str, meaning: str, reference: str | None = None,
               failures: str = "crashes", unit: str = "cycles", verb: str = "crashes") -> Claim:
    """Arm ``name`` (``what`` it changes) fails less often than the baseline, or ``reference``:
    ``meaning`` when supported. Against the baseline a contradiction is said as the arm's
    purpose contradicted; against another arm, plainly."""
    against = reference or "the baseline"
    rate = rate_against(reference, failures, unit)
    contradicted = (f"{_capital(what)} ({{arm}}) {verb} more often than {against}" if reference else
                    f"Contrary to what the arm was meant to show, {what} ({{arm}}) {verb} more "
                    f"often than {against}")
    return Claim(
        name, arm=name, reference=reference, kind="lower",
        supported=f"{meaning}: {what} ({{arm}}) {verb} less often than {against}: {rate} ({RATIO}).",
        contradicted=f"{contradicted}: {rate} ({RATIO}).",
        not_decided=(f"Whether {what} ({{arm}}) {verb} less often than {against} is not decided: "
                     f"{rate}; deciding it needs {{needed}}."))


def fails_at_all(name: str, what: str, outcome: str = "crashed", detail: str = "SIGSEGV",
                 verb: str = "crashes") -> Claim:
    """Arm ``name`` fails at all: claim ``<name>-<verb>``, decided by one valid trial that ends
    as ``outcome`` (``detail``): share 0 makes it a count rule, still counted in the run's
    family. What an arm that varies something the failure might need has to show; a ratio
    against the baseline needs more failures than a trial that ends at its first can give."""
    return Claim(
        f"{name}-{verb}", arm=name, kind="outcome", outcome=outcome, detail=detail, share=0.0,
        supported=f"{_capital(what)} ({{arm}}) {verb} too: {detail} in {{count}} of {{n}} valid trials.",
        not_decided=(f"Whether {what} ({{arm}}) {verb} is not decided: {{count}} of {{n}} valid "
                     f"trials ended in {detail} (a run whose looks were spent before the claim "
                     "existed cannot decide it afterwards)."))
