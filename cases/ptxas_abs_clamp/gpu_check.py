"""On a GPU: the trial driver on every distinct cubin releases.py found, each kernel once.

    python3 cases/ptxas_abs_clamp/gpu_check.py OUT_DIR [--cubins build/ptxas_abs_clamp/cubins]
        [--jobs 4] [--launches 3] [--random 4096]

Reads ``<cubins>/index.json`` (releases.py --cubins), runs ``driver.py`` once per cubin and
kernel (abs_clamp and the two controls; a file whose sha256 is not the index's is skipped), a
few at a time, each its own process with a 60-second limit, and writes to OUT_DIR: ``<cubin>.<kernel>.jsonl`` (the driver's standard
output) and ``.stderr.txt``, and ``summary.json``: per run the releases that made the cubin,
the SASS fact (IABS dropped or not), the final status, the check and the report's six values;
and whether, for abs_clamp, "wrong results" and "IABS dropped" go together on every cubin.
Prints one line per run. Standard library only (the driver needs cuda-python); no network.
Exit status 0 when every run ended with a final record, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_CUBINS = HERE.parents[1] / "build" / "ptxas_abs_clamp" / "cubins"
TIMEOUT_S = 60
# The driver imports the harness's Python driver kit (gpurepro.case.driver): src/ on its path.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    filter(None, (str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH"))))}


def final_record(stdout: str) -> dict[str, Any] | None:
    final = None
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("event") == "final":
            final = obj
    return final


def run_one(entry: dict[str, Any], kernel: str, args: argparse.Namespace) -> dict[str, Any]:
    stem = f"{Path(entry['file']).stem}.{kernel}"
    cubin = args.cubins / entry["file"]
    if hashlib.sha256(cubin.read_bytes()).hexdigest() != entry["sha256"]:
        return {"cubin": entry["file"], "sha256": entry["sha256"], "releases": entry["releases"],
                "sass_abs_dropped": entry.get("abs_dropped"), "kernel": kernel,
                "exit_status": None, "status": None, "skipped": "the file's sha256 is not the index's"}
    argv = [sys.executable, str(HERE / "driver.py"), "--cubin", str(cubin),
            "--kernel", kernel, "--launches", str(args.launches), "--random", str(args.random)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
                              env=ENV)
        stdout, stderr, rc = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr, rc = f"killed after {TIMEOUT_S} s\n", None
    (args.out / f"{stem}.jsonl").write_text(stdout)
    (args.out / f"{stem}.stderr.txt").write_text(stderr)
    final = final_record(stdout)
    row: dict[str, Any] = {"cubin": entry["file"], "sha256": entry["sha256"],
                           "releases": entry["releases"], "sass_abs_dropped": entry.get("abs_dropped"),
                           "kernel": kernel, "exit_status": rc,
                           "status": final.get("status") if final else None}
    if final:
        obs = final.get("observations") or {}
        row.update({k: final[k] for k in ("error", "call", "reason", "check", "counters")
                    if k in final})
        row.update({k: obs[k] for k in ("report_m", "mismatches_by_sign", "launches_agree",
                                        "device", "bindings") if k in obs})
    return row


def agreement(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """abs_clamp on each cubin: wrong results exactly where the SASS has no IABS?"""
    checked = [r for r in rows if r["kernel"] == "abs_clamp" and "check" in r]
    pairs = [{"cubin": r["cubin"], "sass_abs_dropped": r["sass_abs_dropped"],
              "wrong": r["check"]["mismatches"] > 0} for r in checked]
    controls = [r for r in rows if r["kernel"] != "abs_clamp" and "check" in r]
    return {"cubins_checked": len(pairs), "control_runs_checked": len(controls),
            "wrong_exactly_where_iabs_dropped": all(p["wrong"] == p["sass_abs_dropped"]
                                                    for p in pairs) if pairs else None,
            "controls_all_right": all(r["check"]["mismatches"] == 0 for r in controls)
            if controls else None,
            "pairs": pairs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the outputs (made if missing)")
    ap.add_argument("--cubins", type=Path, default=DEFAULT_CUBINS)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--random", type=int, default=4096)
    args = ap.parse_args(argv)
    index = json.loads((args.cubins / "index.json").read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    work = [(e, k) for e in index["cubins"] for k in e["kernels"]]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda ek: run_one(ek[0], ek[1], args), work))
    summary = {"schema": "gpurepro/ptxas-abs-clamp-gpu-check/1", "runs": rows,
               "agreement": agreement(rows)}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for r in rows:
        c = r.get("check") or {}
        first = r["releases"][0].rpartition("==")[2] + (f" (+{len(r['releases']) - 1})"
                                                      if len(r["releases"]) > 1 else "")
        got = (r.get("report_m") or {}).get("got")
        status = r["status"] or ("skipped" if r.get("skipped") else "no final record")
        print(f"{first:18} {r['kernel']:10} {status:11} "
              f"mismatches {c.get('mismatches', '-')}/{c.get('n', '-')} m=-3..2 -> {got}")
    print(json.dumps({k: v for k, v in summary["agreement"].items() if k != "pairs"}))
    return 0 if all(r["status"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
