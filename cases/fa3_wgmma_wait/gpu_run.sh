#!/bin/sh
# fa3_wgmma_wait on one compute capability 9.0 GPU (H200), from a prebuilt tree, no network:
#
#   sh cases/fa3_wgmma_wait/gpu_run.sh OUT [run options, e.g. --trials 12]
#
# run from the repository root with build/fa3_wgmma_wait carried from the machine that built it
# (nox -s fa3_wgmma_wait, or python -m gpurepro build fa3_wgmma_wait --arch sm_90a): the two
# cubins and the runtime wheels for Python 3.12 (cuda-bindings, numpy, nvidia-ml-py; 23 MB).
# Writes OUT/case.journal.jsonl, OUT/case.log and OUT/node.txt; then, on any machine with the
# analysis packages:
#   python -m gpurepro record OUT/case.journal.jsonl --out results/fa3_wgmma_wait/<name>.json
# which writes the document, its report and its pyperf suite (<name>.pyperf.json).
set -u
OUT=${1:?usage: sh cases/fa3_wgmma_wait/gpu_run.sh OUT_DIR [run options]}
shift
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH=src
GPUREPRO_COMMIT=${GPUREPRO_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
export GPUREPRO_COMMIT
{ "$PY" --version; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv || true; } > "$OUT/node.txt" 2>&1
"$PY" -m gpurepro run fa3_wgmma_wait --arch sm_90a --fixed --redact --no-record \
    --journal "$OUT/case.journal.jsonl" "$@" > "$OUT/case.log" 2>&1
rc=$?; echo "case: exit $rc ($OUT/case.log)"
exit $rc
