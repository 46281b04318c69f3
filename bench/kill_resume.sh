#!/usr/bin/env bash
# Stop a tile_unload_race run with SIGKILL while a trial runs on the GPU, show that no trial
# process is left (ps and nvidia-smi in the same command), then resume the journal to the end.
#
#   bench/kill_resume.sh OUT_DIR [extra run flags]
#
# Runs from a prebuilt build/ (python -m gpurepro build tile_unload_race --arch sm_90) with the
# standard library alone; record the journal afterwards with `python -m gpurepro record`.
set -u
out=${1:?usage: bench/kill_resume.sh OUT_DIR [run flags]}
shift
mkdir -p "$out"
journal="$out/kill_resume.journal.jsonl"
log="$out/kill_resume.log"
export PYTHONPATH=src PYTHONUNBUFFERED=1

trial_lines() { local n; n=$(grep -c '"kind":"trial"' "$journal" 2>/dev/null); echo "${n:-0}"; }
# Paths printed relative to the checkout: the log is committed beside the result.
portable() { sed "s#$PWD/##g"; }
trials_running() { ps -eo pid,pgid,stat,etimes,args | grep -E 'build/tile_unload_race/artifacts/(host|seed_repro)/' | grep -v grep | portable; }
gpu_processes() { nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | portable; }

{
echo "# $(date -u +%FT%TZ) start: python -m gpurepro run tile_unload_race --arch sm_90 --no-record --redact $* (journal $(basename "$journal"))"
python3 -m gpurepro run tile_unload_race --arch sm_90 --no-record --redact \
    --journal "$journal" "$@" >"$out/first.stdout" 2>"$out/first.stderr" &
harness=$!
# Wait for two finished trials, then for a trial to be running.
for _ in $(seq 600); do [ "$(trial_lines)" -ge 2 ] && break; sleep 0.2; done
for _ in $(seq 100); do trials_running >/dev/null && break; sleep 0.05; done
sleep 0.5
echo "# before the kill: $(trial_lines) trials journaled; trial processes (pid pgid stat etimes args):"
trials_running
echo "# before the kill: GPU compute processes (nvidia-smi):"
gpu_processes
kill -KILL "$harness"
wait "$harness" 2>/dev/null
echo "# harness $harness killed with SIGKILL (exit status $?)"
for t in 0.5 2.0; do
  sleep "$t"
  echo "# +${t}s after the kill: trial processes (ps), then GPU compute processes (nvidia-smi):"
  trials_running | grep . || echo "(no trial process)"
  gpu_processes | grep . || echo "(no GPU compute process)"
done
echo "# journal after the kill: $(trial_lines) trial lines"
python3 -m gpurepro run tile_unload_race --resume "$journal" --no-record >"$out/resume.stdout" 2>"$out/resume.stderr"
echo "# resume exit status $?; journal: $(trial_lines) trial lines"
trials_running | grep . || echo "(no trial process after the resume)"
} >"$log" 2>&1
cat "$log"
