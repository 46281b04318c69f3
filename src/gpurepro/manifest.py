"""The old name of gpurepro.case, kept for one release: import from gpurepro.case instead."""

import warnings

from .case import *  # noqa: F403
from .case import __all__  # noqa: F401

warnings.warn("gpurepro.manifest is deprecated and goes in the next release: import from "
              "gpurepro.case", DeprecationWarning, stacklevel=2)
