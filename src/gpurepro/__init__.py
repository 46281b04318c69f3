"""gpurepro: GPU driver and compiler bug reports as reproducible, statistically sound experiments.

The flow, one module per stage: manifest -> build -> plan -> run (trial) -> classify -> stats
-> record -> report; env takes the environment fingerprint, journal keeps finished trials.
"""

__version__ = "0.1.0"
