"""gpurepro: GPU driver and compiler bug reports as reproducible, statistically sound experiments.

The flow, one package per stage: case (what a case declares) -> build -> run (plan, trials,
classify, journal; standard library only) -> analyze -> record -> report; env takes the
environment fingerprint, cluster runs the trials through Slurm, cli is the command line and
errors names every error and exit status.
"""

__version__ = "0.1.0"
