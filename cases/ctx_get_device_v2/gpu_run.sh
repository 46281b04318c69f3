#!/usr/bin/env bash
# ctx_get_device_v2 on a GPU node from a prebuilt build/ (no network, nothing installed): every
# arm at the manifest's design (20 trials per arm, 4 at a time), journaled into OUT.
#
#   cases/ctx_get_device_v2/gpu_run.sh OUT
#
# Needs, in the tree: build/ctx_get_device_v2/ as `python -m gpurepro build ctx_get_device_v2
# --arch sm_90` left it (the crash object, runtime/index.json and runtime/wheels/, about 31 MB);
# a Python 3.12 as python3 (the runtime wheels are cp312). Set GPUREPRO_COMMIT (and
# GPUREPRO_DIRTY=0|1) to the commit the copied tree is. Record on any machine afterwards:
#   python -m gpurepro record OUT/ctx_get_device_v2/<name>.journal.jsonl --out results/ctx_get_device_v2/<name>.json
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
"$python" - <<'PY'
import sys
if sys.version_info[:2] != (3, 12):
    sys.exit(f"the runtime wheels are for Python 3.12; {sys.executable} is {sys.version.split()[0]}")
PY
if [[ ! -f build/ctx_get_device_v2/runtime/index.json ]]; then
  echo "build/ctx_get_device_v2/runtime/index.json is missing: build on a machine with network first" >&2
  exit 1
fi
[[ -n "${GPUREPRO_COMMIT:-}" ]] || echo "note: GPUREPRO_COMMIT is not set; the record takes the tree's own git state" >&2
{
  "$python" --version
  "$python" -c 'import importlib.metadata as m
for d in ("cuda-bindings", "numba", "numba-cuda", "llvmlite", "numpy"):
    try: print(d, m.version(d))
    except m.PackageNotFoundError: print(d, "not installed")'
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
} > "$out/node.txt" 2>&1
start=$(date +%s)
set +e
PYTHONPATH=src "$python" -m gpurepro run ctx_get_device_v2 --arch sm_90 --fixed --redact --no-record \
  --out-dir "$out" "${@:2}" 2>&1 | tee "$out/run.log"
status=${PIPESTATUS[0]}
set -e
echo "exit status $status after $(( $(date +%s) - start )) s" | tee -a "$out/run.log"
exit "$status"
