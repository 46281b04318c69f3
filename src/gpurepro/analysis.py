"""The old name of gpurepro.model.result, kept for one release: import from gpurepro.model.result instead."""

import sys
import warnings

from .model import result as _new

warnings.warn("gpurepro.analysis is deprecated and goes in the next release: import from "
              "gpurepro.model.result", DeprecationWarning, stacklevel=2)
# The module itself under its old name: setting or reading one of its names through the old
# name reaches the same object.
sys.modules[__name__] = _new
