"""Toolchain matrix of tile_unload_race: which cuda-tile / tileiras releases emit what for sm_90,
and how their cubins fare in the case's loop.

Every cuda-tile release on PyPI (release candidates left out) × every tileiras release family.
`nox -s tile_matrix` makes one session (one virtualenv) per cell from this file, and
gpurepro.sweep reads it for everything else (see that package's docstring for the stages).
Plain data and the standard library only: the noxfile loads it outside any gpurepro environment.
"""

from __future__ import annotations

TARGET = "sm_90"  # H200

CUDA_TILE = ("1.0.0", "1.0.1", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0")

# Each tileiras family pinned whole, as manifest.py pins 13.3 for the case: tileiras refuses to
# run beside nvcc/nvvm wheels of another release. Within a family, the newest release of each
# package on PyPI (13.3 as the case resolves it), so one family is one cell per cuda-tile
# release; the resolved versions are read back from each environment's installed metadata.
FAMILIES: dict[str, tuple[str, ...]] = {
    "13.1": ("nvidia-cuda-tileiras==13.1.80", "nvidia-cuda-nvcc==13.1.115", "nvidia-nvvm==13.1.115",
             "nvidia-cuda-crt==13.1.115", "nvidia-cuda-runtime==13.1.80",
             "nvidia-nvjitlink==13.1.115"),
    "13.2": ("nvidia-cuda-tileiras==13.2.86", "nvidia-cuda-nvcc==13.2.86", "nvidia-nvvm==13.2.86",
             "nvidia-cuda-crt==13.2.86", "nvidia-cuda-runtime==13.2.86",
             "nvidia-nvjitlink==13.2.86"),
    "13.3": ("nvidia-cuda-tileiras==13.3.36", "nvidia-cuda-nvcc==13.3.73", "nvidia-nvvm==13.3.73",
             "nvidia-cuda-crt==13.3.73", "nvidia-cuda-runtime==13.3.29",
             "nvidia-nvjitlink==13.3.33"),
    "13.4": ("nvidia-cuda-tileiras==13.4.92", "nvidia-cuda-nvcc==13.4.92", "nvidia-nvvm==13.4.92",
             "nvidia-cuda-crt==13.4.92", "nvidia-cuda-runtime==13.4.92",
             "nvidia-nvjitlink==13.4.92"),
    "13.5": ("nvidia-cuda-tileiras==13.5.37", "nvidia-cuda-nvcc==13.5.37", "nvidia-nvvm==13.5.37",
             "nvidia-cuda-crt==13.5.37", "nvidia-cuda-runtime==13.5.37",
             "nvidia-nvjitlink==13.5.37"),
}

# The manifest's artifact each export stands in for on the GPU (`--artifact tile_cubin=...`),
# and the plain nvcc cubin each family's nvcc builds for the `control-cuda` arm.
TILE_ARTIFACT = "tile_cubin"
CONTROL_ARTIFACT = "cuda_cubin"
CONTROL_ARM = "control-cuda"

# How the kernel is exported: the case's own script, and where a release cannot run it, a small
# labelled variant beside it. `releases`: the cuda-tile releases a variant is tried with (None:
# all). cuda-tile 1.3 and 1.4 know only cutile_python_v1; for this kernel (three float32 arrays,
# int32 shapes and strides) both conventions give the same kernel parameters (15: per array a
# pointer, two shapes, two strides), so host.cc launches either cubin unchanged.
VARIANTS: tuple[dict[str, object], ...] = (
    {"name": "reporter", "script": "kernel_tile.py", "releases": None,
     "description": "kernel_tile.py: the reporter's kernel and signature (cutile_python_v2)"},
    {"name": "calling-convention-v1", "script": "kernel_tile_cc_v1.py",
     "releases": ("1.3.0", "1.4.0"),
     "description": "kernel_tile_cc_v1.py: the same kernel and constraints under "
                    "cutile_python_v1, the only calling convention cuda-tile 1.3 and 1.4 know"},
)

# GPU stage: what runs for each distinct cubin, one trial at a time. The wall-clock limit keeps
# a hung trial from eating the stage's time (5 s of budget, 15 s for loading and teardown).
ARMS = ("baseline",)
TRIALS = 5
DURATION_S = 5.0
TRIAL_TIMEOUT_S = 20.0
JOBS = 1


def cell_id(cuda_tile: str, family: str) -> str:
    return f"{cuda_tile}-{family}"


def pins(cuda_tile: str, family: str) -> list[str]:
    """The requirements of one cell: cuda-tile and the whole tileiras family."""
    return [f"cuda-tile=={cuda_tile}", *FAMILIES[family]]


def cells() -> list[tuple[str, str]]:
    """(cuda-tile, family) for every cell, oldest first."""
    return [(ct, fam) for ct in CUDA_TILE for fam in FAMILIES]
