"""What a case declares: the one package a case's files import (standard library only).

A case is a folder ``cases/<name>/`` whose ``manifest.py`` defines ``CASE = Case(...)`` from
the names here; ``load_case`` imports and checks one, naming the file and the field when a
manifest is wrong. Everything else in gpurepro reads cases through these names.
"""

from ..errors import ManifestError
from .axis import Axis
from .model import (
    CLAIM_KINDS,
    OUTCOMES,
    PLACEHOLDER,
    SINGLE_ARM_KINDS,
    Arm,
    Artifact,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    OutputCheck,
    Stratum,
    Tool,
    TrialBudget,
    TrialCommand,
    TrialContext,
    find_case,
    find_repo_root,
    load_case,
    load_sibling,
    repo_root,
    validate,
)

__all__ = [
    "CLAIM_KINDS", "OUTCOMES", "PLACEHOLDER", "SINGLE_ARM_KINDS", "Arm", "Artifact", "Axis", "Case",
    "Claim", "Defaults", "Devices", "Exposure", "Factor", "ManifestError", "OutputCheck", "Stratum",
    "Tool",
    "TrialBudget", "TrialCommand", "TrialContext", "find_case", "find_repo_root", "load_case",
    "load_sibling", "repo_root", "validate",
]
