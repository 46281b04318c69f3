"""The claim kinds, one object each (``ClaimKind``, in .base), registered by the ``Claim.kind``
values they decide. The harness asks a claim's kind (``kind_of``) for its test, its evidence,
its simulation model and its wording instead of branching on the kind's name: a new kind is
one module here and its line in ``_KINDS`` (and its name in gpurepro.case.model.CLAIM_KINDS,
which manifests are checked against without the analysis)."""

from __future__ import annotations

from ...case.model import Claim
from . import concentrated, rate, share, timed
from .base import ClaimKind

# What other modules use; the rest is this module's own.
__all__ = ["ClaimKind", "KINDS", "kind_of", "reference_of"]

_KINDS: tuple[ClaimKind, ...] = (rate.KIND, share.KIND, concentrated.KIND, timed.KIND)

# Each Claim.kind value to the object that decides it.
KINDS: dict[str, ClaimKind] = {name: k for k in _KINDS for name in k.names}


def kind_of(claim: Claim) -> ClaimKind:
    """The object that decides ``claim`` (KeyError for a kind no module registers)."""
    return KINDS[claim.kind]


def reference_of(claim: Claim, baseline: str) -> str | None:
    """The arm a claim compares its arm with: its reference, the baseline by default; None for
    a kind about one arm alone."""
    return None if KINDS[claim.kind].single_arm else (claim.reference or baseline)
