"""The old name of gpurepro.case.toolchain, kept for one release: import from gpurepro.case.toolchain instead."""

import sys
import warnings

from .case import toolchain as _new

warnings.warn("gpurepro.toolchain is deprecated and goes in the next release: import from "
              "gpurepro.case.toolchain", DeprecationWarning, stacklevel=2)
# The module itself under its old name: setting or reading one of its names through the old
# name reaches the same object.
sys.modules[__name__] = _new
