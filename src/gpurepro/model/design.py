"""The run's design: how its claims are decided as its trials come in. Standard library only.

The defaults here are defined once, for the command line that asks for a design and for the
analysis that re-reads one from a journal (gpurepro.analyze.claims, calibrate).
"""

from __future__ import annotations

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
