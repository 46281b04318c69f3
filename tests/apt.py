"""Debian packages a test needs, installed with apt-get where they are missing and this is root
(CI runs as root and reaches Debian's mirrors): what tests/browser.py and tests/slurm_cluster.py
both do. Standard library only; imported as tests.apt or, from those files run as scripts, by
their folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence


def install(packages: Sequence[str], missing: Callable[[], list[str]]) -> str | None:
    """Install ``packages`` when ``missing()`` names anything; None on success, else why not."""
    if not missing():
        return None
    if shutil.which("apt-get") is None:
        return f"{', '.join(missing())} missing and no apt-get to install {' '.join(packages)}"
    if os.geteuid() != 0:
        return f"{', '.join(missing())} missing; installing {' '.join(packages)} needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            return f"{' '.join(argv[:2])} failed: {said[-1] if said else done.returncode}"
    return None if not missing() else f"still missing after install: {', '.join(missing())}"
