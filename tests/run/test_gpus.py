"""--gpus: 'all' selects GPUs by UUID (NVML and CUDA may order them differently)."""

from __future__ import annotations

import pytest

from gpurepro.errors import UsageError
from gpurepro.run.session import chosen_gpus as _gpus

INFO = {"available": True, "gpus": [
    {"index": 0, "uuid": "GPU-aaaa", "name": "H200", "compute_capability": "9.0"},
    {"index": 1, "uuid": "GPU-bbbb", "name": "H200", "compute_capability": "9.0"}]}


def test_all_names_every_gpu_by_uuid():
    assert _gpus("all", INFO) == ("GPU-aaaa", "GPU-bbbb")


def test_a_list_may_name_uuids_or_indices():
    assert _gpus("GPU-bbbb", INFO) == ("GPU-bbbb",)
    assert _gpus("0,1", INFO) == ("0", "1")


def test_an_unknown_gpu_is_a_usage_error():
    with pytest.raises(UsageError, match="no such GPU 7"):
        _gpus("7", INFO)
