#!/bin/sh
# ptxas_abs_clamp on one compute capability 9.0 GPU (H200), from a prebuilt tree, no network:
#
#   sh cases/ptxas_abs_clamp/gpu_run.sh OUT
#
# run from the repository root, with build/ptxas_abs_clamp and build/bisect/ptxas_abs_clamp
# carried from the machine that built them (python -m gpurepro build ptxas_abs_clamp --arch
# sm_90; python -m gpurepro bisect ptxas_abs_clamp --axis ptxas --stage cpu). Python 3.12 with
# the standard library: the case's cuda-bindings 13.3.1 is carried as cp312 wheels in
# build/ptxas_abs_clamp/runtime (Case.runtime); PYTHON names another interpreter.
# Writes, under OUT:
#   case.journal.jsonl    the case: every arm, its default 12 trials, 4 at a time (about 30 s)
#   bisect/               the bisection's GPU stage over the ptxas axis: the ends of every
#                         segment of equal SASS, then binary search (about 20 s)
#   bisect-exhaustive/    the same over every distinct cubin, as a check of the search (30 s)
#   *.log                 what each printed
# then, on the CPU machine, where the analysis packages are (the README's "How to run"):
#   python -m gpurepro bisect ptxas_abs_clamp --axis ptxas --stage assemble --gpu-out OUT/bisect
#   python -m gpurepro bisect ptxas_abs_clamp --axis ptxas --stage assemble --gpu-out OUT/bisect-exhaustive
#   python -m gpurepro record OUT/case.journal.jsonl --out results/ptxas_abs_clamp/<name>.json
set -u
OUT=${1:?usage: sh cases/ptxas_abs_clamp/gpu_run.sh OUT_DIR}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH=src
# The fingerprint records the commit the tree is (a copied tree may carry another git state).
GPUREPRO_COMMIT=${GPUREPRO_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
export GPUREPRO_COMMIT
status=0

"$PY" -m gpurepro run ptxas_abs_clamp --arch sm_90 --fixed --redact --no-record \
    --journal "$OUT/case.journal.jsonl" > "$OUT/case.log" 2>&1
rc=$?; echo "case: exit $rc ($OUT/case.log)"; [ $rc -eq 0 ] || status=$rc

for mode in bisect exhaustive; do
    dir=$OUT/bisect; flag=
    [ $mode = exhaustive ] && { dir=$OUT/bisect-exhaustive; flag=--exhaustive; }
    "$PY" -m gpurepro bisect ptxas_abs_clamp --axis ptxas --stage gpu $flag --gpu-out "$dir" \
        > "$dir.log" 2>&1
    rc=$?; echo "bisect ($mode): exit $rc ($dir.log)"; [ $rc -eq 0 ] || status=$rc
done
exit $status
