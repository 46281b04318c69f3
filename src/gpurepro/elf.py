"""The old name of gpurepro.building.elf, kept for one release: import from gpurepro.building.elf instead."""

import sys
import warnings

from .building import elf as _new

warnings.warn("gpurepro.elf is deprecated and goes in the next release: import from "
              "gpurepro.building.elf", DeprecationWarning, stacklevel=2)
# The module itself under its old name: setting or reading one of its names through the old
# name reaches the same object.
sys.modules[__name__] = _new
