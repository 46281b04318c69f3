"""`python -m gpurepro env`: this machine's environment fingerprint, as a run records it."""

from __future__ import annotations

import argparse
import json

from ..env import fingerprint as envmod
from ..errors import EXIT_OK
from .args import repository_root


def cmd_env(args: argparse.Namespace) -> int:
    print(json.dumps(envmod.fingerprint(repository_root(), redact=args.redact), indent=2))
    return EXIT_OK
