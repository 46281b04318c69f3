#!/usr/bin/env bash
# The main job of a case on a GPU node, as a new user runs it: the case's own defaults (its main
# question, the decisive design; no plan flag), from the prebuilt tree that `make <case>` left
# where the toolchain installs (it builds, then exits 5 on a machine without a GPU). Then the
# record, the report and the issue comment, on the node.
#
#   bench/main_job.sh CASE OUT_DIR [output flags, e.g. --redact]
#
# The run stage writes its journal under results/CASE/ of this tree, as `make` would; OUT_DIR gets
# a copy of what the run, the record and the comment wrote (the comment as comment.md), and
# main_job.log: each command, its exit status and its wall-clock seconds (the run stage's is the
# main job's GPU time). The run
# stage needs the standard library and, for the decisive design's plan, numpy and scipy; record,
# report and issue need gpurepro[analysis] (jsonschema, pyelftools, matplotlib, ...).
set -uo pipefail
case=${1:?usage: bench/main_job.sh CASE OUT_DIR [output flags]}
out=${2:?usage: bench/main_job.sh CASE OUT_DIR [output flags]}
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
log="$out/main_job.log"
: >"$log"

# One step: its command, exit status and wall time into the log; stdout and stderr apart.
step() {
  local name=$1; shift
  local t0 status
  t0=$EPOCHREALTIME
  "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"
  status=$?
  printf '%s: exit %d in %.1f s: %s\n' "$name" "$status" \
    "$("$python" -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$t0" "$EPOCHREALTIME")" \
    "$*" | tee -a "$log"
  return "$status"
}

before=$(ls results/"$case"/*.journal.jsonl 2>/dev/null | sort)
step run "$python" -m gpurepro run "$case" --no-record "$@"
journal=$(comm -13 <(echo "$before") <(ls results/"$case"/*.journal.jsonl 2>/dev/null | sort) | head -n 1)
if [[ -z "$journal" ]]; then
  echo "the run wrote no journal (run.stderr says why)" | tee -a "$log"
  exit 1
fi
echo "journal: $journal" | tee -a "$log"
step record "$python" -m gpurepro record "$journal"  # the document, its report and plots
doc=${journal%.journal.jsonl}.json
step issue "$python" -m gpurepro issue "$doc"
cp "$out/issue.stdout" "$out/comment.md"
cp "${journal%.journal.jsonl}".* "$out/"
