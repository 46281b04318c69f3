#!/usr/bin/env bash
# The main job of a case on an offline GPU node, from its pack, as docs/offline.md tells a user:
# unpack, `python3 run.py` (the case's defaults; flags after the pack go to run.py), and bring
# the journal back. Each step's exit status and wall time go to OUT_DIR/main_job.log, with paths
# relative to the pack (no node path in what comes back); OUT_DIR gets the journal and run.log.
#
#   bench/pack_job.sh PACK.tar.gz OUT_DIR [run.py flags]
#
# Back in the checkout of the pack's commit: copy the journal to the path main_job.log names,
# then `python -m gpurepro record` it (`gpurepro scrub --redact` first for a pack made without
# --redact: the node's hostname is in the journal and in its name).
set -uo pipefail
pack=${1:?usage: bench/pack_job.sh PACK.tar.gz OUT_DIR [run.py flags]}
out=${2:?usage: bench/pack_job.sh PACK.tar.gz OUT_DIR [run.py flags]}
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
tar xzf "$pack" -C "$work" || { echo "cannot unpack $pack" >&2; exit 1; }
dir=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
cd "$dir"
: >"$out/main_job.log"
before=$(find results -name '*.journal.jsonl' 2>/dev/null | sort)
t0=$EPOCHREALTIME
PYTHONUNBUFFERED=1 python3 run.py "$@" >"$out/run.log" 2>&1
status=$?
printf 'run.py: exit %d in %.1f s: python3 run.py%s (pack %s)\n' "$status" \
  "$(python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$t0" "$EPOCHREALTIME")" \
  "${*:+ $*}" "$(basename "$dir")" | tee -a "$out/main_job.log"
journal=$(comm -13 <(echo "$before") <(find results -name '*.journal.jsonl' | sort) | head -n 1)
if [[ -z "$journal" ]]; then
  echo "the run wrote no journal (run.log says why)" | tee -a "$out/main_job.log"
  exit 1
fi
echo "journal: $journal" | tee -a "$out/main_job.log"
cp "$journal" "$out/"
exit "$status"
