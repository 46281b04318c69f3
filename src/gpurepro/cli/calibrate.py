"""`python -m gpurepro calibrate CASE`: a case's claims simulated on its design (the family-wise
error rate under each null scenario, and power), gpurepro.analyze.calibrate. A module of its
own: the simulation needs scipy.stats, which the commands that read documents (issue,
validate, record) do not import.
"""

from __future__ import annotations

import argparse

from ..analyze.calibrate import run_calibration
from ..case.load import load_case
from ..errors import UsageError
from .args import repository_root, sequential_design

# What other modules use; the rest is this module's own.
__all__ = ["cmd_calibrate"]


def cmd_calibrate(args: argparse.Namespace) -> int:
    root = repository_root()
    case = load_case(args.case, root)
    if not case.claims:
        raise UsageError(f"{case.name} declares no claims: there is nothing to calibrate")
    if (args.alpha_spending or args.supported_share) and not args.design_of:
        raise UsageError("--alpha-spending and --supported-share go with --design-of (a decisive "
                         "run's design)")
    design, trials = sequential_design(case, args, alpha_for_fixed=True)
    return run_calibration(case, root, design, trials, args.rates_from, args.runs,
                           args.seed, args.workers, args.json, args.design_of,
                           spending=args.alpha_spending if args.design_of else None,
                           supported_share=args.supported_share if args.design_of else None,
                           **({"scenarios": args.scenarios} if args.scenarios else {}),
                           **({"process_names": args.processes} if args.processes else {}),
                           processes_from=args.processes_from)
