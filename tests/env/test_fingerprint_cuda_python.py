"""The fingerprint's driver facts through cuda.bindings (module loading mode, driver API
version), and what it records where cuda.bindings is not importable or lacks a call. A
stand-in for cuda.bindings.driver (tests/fixtures/fake_cuda_bindings_loading) is put on the path of a
fresh interpreter; the real one is not needed."""

from __future__ import annotations

import json
import os
import sys

import pytest

from gpurepro.env.fingerprint import cuda_python_facts
from tests import pace
from tests.conftest import ROOT

FAKE = ROOT / "tests" / "fixtures" / "fake_cuda_bindings_loading"
PROGRAM = ("import json, sys; from gpurepro.env.fingerprint import cuda_python_facts; "
           "print(json.dumps(cuda_python_facts()))")


def _facts(fake: bool, **env: str) -> dict:
    path = [str(ROOT / "src"), *([str(FAKE)] if fake else [])]
    done = pace.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True,
                    env={**{k: v for k, v in os.environ.items() if k != "CUDA_MODULE_LOADING"},
                         "PYTHONPATH": os.pathsep.join(path), **env})
    return json.loads(done.stdout)


@pytest.mark.parametrize("mode", ["lazy", "eager"])
def test_the_driver_says_its_loading_mode_and_version_through_cuda_bindings(mode):
    facts = _facts(True, GPUREPRO_FAKE_LOADING=mode, CUDA_MODULE_LOADING=mode.upper())
    assert facts["module_loading"] == mode and facts["driver_api_version"] == 13000
    assert facts["module_loading_requested"] == mode
    assert facts["source"].startswith("cuda.bindings") and "reason" not in facts


def test_a_driver_without_the_call_keeps_the_version_and_says_why():
    facts = _facts(True, GPUREPRO_FAKE_LOADING="missing")
    assert facts["module_loading"] is None and facts["driver_api_version"] == 13000
    assert "cuModuleGetLoadingMode" in facts["reason"]


def test_without_cuda_bindings_only_what_was_requested():
    if _has_bindings():
        pytest.skip("cuda.bindings is installed here: the fallback is not reachable")
    facts = cuda_python_facts({"CUDA_MODULE_LOADING": "EAGER"})
    assert facts == {"source": None, "module_loading": None, "module_loading_requested": "eager",
                     "driver_api_version": None, "reason": facts["reason"]}
    assert "not importable" in facts["reason"]


def _has_bindings() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("cuda.bindings") is not None
    except ModuleNotFoundError:
        return False


def test_the_fingerprint_carries_them_and_the_report_shows_them():
    from gpurepro.report.markdown import environment_rows

    doc = json.loads((ROOT / "results" / "tile_unload_race" /
                      "20261201T101933Z_NVIDIA-H200_redacted.json").read_text())
    assert not any(k.startswith("Module loading") for k, _ in environment_rows(doc))
    doc["environment"]["cuda_python"] = _facts(True)
    rows = dict(environment_rows(doc))
    (key,) = [k for k in rows if k.startswith("Module loading")]
    assert rows[key] == "lazy / 13000"
    from gpurepro.record.validation import validation_errors

    assert validation_errors(doc) == []
