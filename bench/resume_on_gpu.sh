#!/usr/bin/env bash
# A stopped tile_unload_race run resumed on a GPU node, both ways a resume meets its device,
# from a prebuilt build/ (no network, standard library only):
#
#   bench/resume_on_gpu.sh OUT
#
# same/    a fresh run (baseline and never-unload, 3 trials each, 2 s trials, one at a time) is
#          stopped by SIGINT once 2 trials are journaled (exit 130 expected), then resumed here:
#          the resume probes this GPU, finds the journal's own, and runs the rest (exit 0).
# other/   the first 2 trials of the committed H200 journal 20261201T142454Z (another lent H200,
#          its UUID in the header) resumed here: refused unless --other-device (exit 2, the file
#          byte-identical), then resumed with --other-device (exit 0; the resume journaled).
#
# Needs build/tile_unload_race/ as `python -m gpurepro build tile_unload_race --arch sm_90` left it.
# Each step's exit status and the journal's sha256 around the refused resume go to OUT/steps.log.
# Record afterwards on any machine: python -m gpurepro record OUT/<part>/<name>.journal.jsonl
set -uo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out/same" "$out/other"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
run=(env PYTHONPATH=src "$python" -m gpurepro run tile_unload_race)
log="$out/steps.log"
step() { echo "$*" | tee -a "$log"; }

trials_in() {  # trials journaled so far (a line with an outcome); 0 without a journal
  [[ -f "$1" ]] || { echo 0; return; }
  "$python" -c 'import json, sys
n = 0
for line in open(sys.argv[1]):
    try: n += "outcome" in json.loads(line)
    except ValueError: pass
print(n)' "$1"
}

# same/: stop a fresh run mid-plan, resume it on the same GPU.
"${run[@]}" --arch sm_90 --arms baseline,never-unload --fixed --trials 3 --duration 2 --jobs 1 \
  --seed 11 --redact --no-record --out-dir "$out/same" > "$out/same/run.log" 2>&1 &
pid=$!
journal=""
for _ in $(seq 600); do
  journal=$(ls "$out"/same/tile_unload_race/*.journal.jsonl 2>/dev/null | head -n 1)
  if [[ -n "$journal" && $(trials_in "$journal") -ge 2 ]]; then break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -INT "$pid" 2>/dev/null
wait "$pid"
step "same: first run exit $? with $(trials_in "$journal") trials journaled"
[[ -n "$journal" ]] || { step "same: the run wrote no journal (run.log says why)"; exit 1; }
"${run[@]}" --resume "$journal" --no-record > "$out/same/resume.log" 2>&1
step "same: resume exit $? with $(trials_in "$journal") trials journaled"

# other/: a journal from another GPU.
partial="$out/other/20261201T142454Z_NVIDIA-H200_redacted.journal.jsonl"
head -n 3 results/tile_unload_race/20261201T142454Z_NVIDIA-H200_redacted.journal.jsonl > "$partial"
before=$(sha256sum "$partial" | cut -d' ' -f1)
"${run[@]}" --resume "$partial" --no-record > "$out/other/refused.log" 2>&1
status=$?
after=$(sha256sum "$partial" | cut -d' ' -f1)
step "other: resume exit $status; journal sha256 before $before after $after"
"${run[@]}" --resume "$partial" --other-device --no-record > "$out/other/resume.log" 2>&1
step "other: resume --other-device exit $? with $(trials_in "$partial") trials journaled"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader >> "$log" 2>&1 || true
