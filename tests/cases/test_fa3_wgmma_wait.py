"""cases/fa3_wgmma_wait without a GPU: the manifest (arms, the timed claims and their margins,
the trial commands: overlap-again runs overlap's cubin), the driver's reference, and the driver
on a machine without libcuda (a no_driver final record, exit status 3)."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CASE_DIR = ROOT / "cases" / "fa3_wgmma_wait"


@pytest.fixture(scope="module")
def case():
    from gpurepro.case.load import load_case

    return load_case("fa3_wgmma_wait", ROOT)


def _command(case, arm):
    """The arm's trial command with the run stage's own artifact mapping (execute._context): a
    per-release artifact resolves to the build of the arm's release."""
    from gpurepro.case.model import TrialBudget
    from gpurepro.run.execute import _context

    levels = {lv for f in case.resolved_arms().values() for lv in f.values()}
    names = {a.name: a.outputs[0] for a in case.artifacts}
    names |= {a.built_name(lv): a.outputs[0] for a in case.artifacts if a.per for lv in levels}
    index = {"artifacts": {n: {"path": f"b/{n}/{out}"} for n, out in names.items()}}
    ctx = _context(case, arm, case.resolved_arms()[arm], index, Path("/"),
                   TrialBudget(30, 0, 120))
    ctx = dataclasses.replace(ctx, runtime=Path("/r"))
    return case.trial_command(ctx)


def test_the_arms_claims_and_commands(case):
    assert [a.name for a in case.arms] == ["ptxas-12-4-131", "ptxas-12-5-82", "ptxas-12-6-20",
                                           "ptxas-12-6-85", "overlap", "serialized",
                                           "overlap-again", "serialized-12-4-131",
                                           "serialized-12-5-82", "serialized-12-6-20",
                                           "serialized-12-6-85"]
    arms = case.resolved_arms()
    assert {a: arms[a]["ptxas"] for a in arms} == {
        "ptxas-12-4-131": "12.4.131", "ptxas-12-5-82": "12.5.82", "ptxas-12-6-20": "12.6.20",
        "ptxas-12-6-85": "12.6.85", "overlap": "13.3.73", "serialized": "13.3.73",
        "overlap-again": "13.3.73", "serialized-12-4-131": "12.4.131",
        "serialized-12-5-82": "12.5.82", "serialized-12-6-20": "12.6.20",
        "serialized-12-6-85": "12.6.85"}
    assert {arms[a]["kernel"] for a in arms if not a.startswith("serialized")} == {"overlap"}
    assert {arms[a]["kernel"] for a in arms if a.startswith("serialized")} == {"serialized"}
    claims = {c.name: c for c in case.claims}
    # Each release against the pinned release's overlap, in the direction the first H200 run
    # measured, and the boundary between 12.5.82 and 12.6.20.
    for name, kind in (("ptxas-12-4-131-slower", "slower"), ("ptxas-12-5-82-slower", "slower"),
                       ("ptxas-12-6-20-same", "same"), ("ptxas-12-6-85-same", "same")):
        assert (claims[name].kind, claims[name].reference) == (kind, "overlap")
    assert (claims["faster-from-12-6-20"].arm, claims["faster-from-12-6-20"].reference) == (
        "ptxas-12-6-20", "ptxas-12-5-82")
    assert (claims["overlap-again-same"].kind, claims["overlap-again-same"].reference) == ("same", "overlap")
    assert (claims["serialized-slower"].kind, claims["serialized-slower"].reference) == ("slower", "overlap")
    assert 0 < claims["overlap-again-same"].margin < claims["serialized-slower"].margin < 1
    # The control through each release against the pinned release's control, within the margin.
    for release in ("12-4-131", "12-5-82", "12-6-20", "12-6-85"):
        claim = claims[f"serialized-{release}-same"]
        assert (claim.kind, claim.arm, claim.reference) == (
            "same", f"serialized-{release}", "serialized")
    assert {f"{a}-right" for a in arms} <= set(claims)
    assert case.defaults.jobs == 1 and case.check.kind == "tolerance"
    argv = {arm: _command(case, arm).argv
            for arm in ("overlap", "serialized", "overlap-again", "serialized-12-5-82")}
    cubin = {arm: a[a.index("--cubin") + 1] for arm, a in argv.items()}
    assert cubin["overlap"] == cubin["overlap-again"] == "/b/cubin_overlap_13.3.73/kernel.cubin"
    assert cubin["serialized"] == "/b/cubin_serialized_13.3.73/kernel.cubin"
    assert cubin["serialized-12-5-82"] == "/b/cubin_serialized_12.5.82/kernel.cubin"
    assert "--check-rel" in argv["overlap"] and "--loops" in argv["overlap"]
    assert _command(case, "overlap").env["PYTHONPATH"].startswith("/r")
    waits = {a.name: a.command for a in case.artifacts if a.name.startswith("ptx_")}
    assert "-DWAIT_PENDING=1" in waits["ptx_overlap"] and "-DWAIT_PENDING=0" in waits["ptx_serialized"]


def test_a_timed_case_runs_fixed_size(case):
    import argparse

    from gpurepro.cli.args import sequential_design

    args = argparse.Namespace(decisive=False, fixed=False, trials=None, until_decided=False,
                              decisive_by_default=True, look_every=None, max_trials=None,
                              alpha=None)
    design, trials = sequential_design(case, args)
    assert (design.to_json(), trials) == (None, case.defaults.trials_per_arm)


def test_the_reference_weights_each_key_block_by_its_visits():
    np = pytest.importorskip("numpy")
    sys.path.insert(0, str(CASE_DIR))
    try:
        import driver
    finally:
        sys.path.remove(str(CASE_DIR))
    q, k, v = driver.inputs(np, 2, 7)
    out = driver.reference(np, q, k, v, 3)  # blocks 0, 1, 0
    keys = np.concatenate([k[0], k[1], k[0]]).astype(np.float64)
    vals = np.concatenate([v[0], v[1], v[0]]).astype(np.float64)
    s = q.astype(np.float64) @ keys.T / 8.0
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    assert np.allclose(out, (p / p.sum(axis=-1, keepdims=True)) @ vals)
    assert out.shape == (2, 64, 64)


def test_the_driver_without_libcuda_is_no_driver(tmp_path):
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("libcuda.so.1 loads here: the no-driver path needs a machine without it")
    except OSError:
        pass
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(b"not a cubin")
    done = subprocess.run([sys.executable, str(CASE_DIR / "driver.py"), "--cubin", str(cubin)],
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)
    final = [json.loads(x) for x in done.stdout.splitlines() if '"final"' in x][-1]
    assert done.returncode == 3 and final["status"] == "no_driver", done.stderr


def _sass(text):
    from gpurepro.building.sass import parse_instr

    return [parse_instr(16 * i, line) for i, line in enumerate(text.strip().splitlines())]


def test_wait_placement_counts_the_softmax_between_the_waits():
    sys.path.insert(0, str(CASE_DIR))
    try:
        import wait_placement as wp
    finally:
        sys.path.remove(str(CASE_DIR))
    group = "WARPGROUP.ARRIVE ;\n" + "HGMMA.64x64x16.F32 R24, gdesc[UR8], R24 ;\n" * 8
    overlap = _sass(group + "WARPGROUP.DEPBAR.LE gsb0, 0x1 ;\n" + "MUFU.EX2 R1, R1 ;\n" * 3
                    + "@!P0 BRA 0x10 ;\nWARPGROUP.DEPBAR.LE gsb0, 0x0 ;\nEXIT ;")
    assert wp.ex2_between_waits(overlap) == [3]
    assert wp.marks(overlap) == ["1 WARPGROUP.ARRIVE", "8 HGMMA", "1 DEPBAR 0x1", "3 MUFU.EX2",
                                 "1 BRA", "1 DEPBAR 0x0", "1 EXIT"]
    serialized = _sass(group + "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n" + "MUFU.EX2 R1, R1 ;\n" * 3)
    assert wp.ex2_between_waits(serialized) == [0]


def _verdict_module():
    from gpurepro.case import load_sibling

    return load_sibling(str(CASE_DIR / "manifest.py"), "verdict")


def test_the_verdict_groups_arms_by_their_output_bytes():
    from gpurepro.model.result import Analysis

    doc = json.loads(next((ROOT / "results" / "fa3_wgmma_wait").glob("20261204T122215Z*_redacted.json"))
                     .read_text())
    for t in doc["trials"]:
        t["observations"]["output_sha256"] = "a" * 64
    (same,) = _verdict_module()._outputs(Analysis.of(doc))
    assert same.startswith("Every trial of the 7 arms returned the same output bytes (1 sha256")
    for t in doc["trials"]:
        if t["arm"] == "ptxas-12-5-82":
            t["observations"]["output_sha256"] = "b" * 64
    (differ,) = _verdict_module()._outputs(Analysis.of(doc))
    assert "`ptxas-12-5-82` (1 sha256)" in differ and "`overlap`, `overlap-again`" in differ
    for t in doc["trials"]:
        del t["observations"]["output_sha256"]
    assert _verdict_module()._outputs(Analysis.of(doc)) == []  # drivers before the digest


def test_the_verdict_reads_the_controls_claims():
    from gpurepro.model.result import Analysis

    doc = json.loads(next((ROOT / "results" / "fa3_wgmma_wait").glob("20261204T122215Z*_redacted.json"))
                     .read_text())
    assert _verdict_module()._control(Analysis.of(doc)) == []  # a run without the controls
    claim = next(c for c in doc["claims"] if c["name"] == "ptxas-12-6-85-same")
    doc["claims"] += [{**claim, "name": "serialized-12-4-131-same", "decision": "supported"},
                      {**claim, "name": "serialized-12-5-82-same", "decision": "contradicted"}]
    same, other = _verdict_module()._control(Analysis.of(doc))
    assert "through `serialized-12-4-131` as through the pinned release" in same
    assert "through `serialized-12-5-82` (contradicted) as through" in other
