"""What a case declares: the one package a case's files import (standard library only).

A case is a folder ``cases/<name>/`` whose ``manifest.py`` defines ``CASE = Case(...)`` from
the names here (``model``); ``load_case`` imports and checks one, naming the file and the field
when a manifest is wrong (``load``). ``kit`` holds what manifests share (a host driver's
recipe); ``instruments`` the instrument factor any case can switch on; ``TextOutput`` reads a program that
prints text (one ``OutputLine`` pattern per final line); ``toolchain`` finds a case's tools (its pinned wheels, or the host) and their versions; ``Analysis`` and its views
(gpurepro.model.result) are what a case's ``verdict(analysis)`` reads. Everything else in
gpurepro reads cases through these names.
"""

from ..errors import ManifestError
from ..model.outcomes import OUTCOMES
from ..model.result import Analysis, ArmSummary, CrashSite
from . import declared, instruments, kit
from .axis import Axis, RuntimeAxis
from .load import find_case, find_repo_root, load_case, load_sibling, repo_root, validate
from .model import (
    CLAIM_KINDS,
    PLACEHOLDER,
    SINGLE_ARM_KINDS,
    Arm,
    Artifact,
    Case,
    Claim,
    Conclusion,
    Defaults,
    Devices,
    Exposure,
    Factor,
    Family,
    OutputCheck,
    ProgramValue,
    Releases,
    Runtime,
    Stratum,
    Timing,
    Tool,
    TrialBudget,
    TrialCommand,
    TrialContext,
)
from .text_output import OutputLine, TextOutput

__all__ = [
    "Analysis", "ArmSummary", "CrashSite", "declared", "instruments", "kit",
    "CLAIM_KINDS", "OUTCOMES", "PLACEHOLDER", "SINGLE_ARM_KINDS", "Arm", "Artifact", "Axis", "Case",
    "Claim", "Conclusion", "Defaults", "Devices", "Exposure", "Factor", "Family", "ManifestError", "OutputCheck", "ProgramValue", "Releases",
    "Runtime", "RuntimeAxis", "OutputLine", "TextOutput",
    "Stratum", "Timing", "Tool",
    "TrialBudget", "TrialCommand", "TrialContext", "find_case", "find_repo_root", "load_case",
    "load_sibling", "repo_root", "validate",
]
