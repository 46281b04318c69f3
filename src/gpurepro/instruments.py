"""The old name of gpurepro.case.instruments, kept for one release: import from gpurepro.case.instruments instead."""

import sys
import warnings

from .case import instruments as _new

warnings.warn("gpurepro.instruments is deprecated and goes in the next release: import from "
              "gpurepro.case.instruments", DeprecationWarning, stacklevel=2)
# The module itself under its old name: setting or reading one of its names through the old
# name reaches the same object.
sys.modules[__name__] = _new
