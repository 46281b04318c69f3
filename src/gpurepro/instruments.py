"""The old name of gpurepro.run.instruments, kept for one release: import from gpurepro.run.instruments instead."""

import sys
import warnings

from .run import instruments as _new

warnings.warn("gpurepro.instruments is deprecated and goes in the next release: import from "
              "gpurepro.run.instruments", DeprecationWarning, stacklevel=2)
# The module itself under its old name: setting or reading one of its names through the old
# name reaches the same object.
sys.modules[__name__] = _new
