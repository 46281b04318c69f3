"""Run one trial under an instrument and keep the program's protocol output intact.

    python instrument.py --tool {coredump,compute-sanitizer,cuda-gdb} -- PROGRAM ARGS...

The report says every instrument suppressed the failure; the ablation measures that, so each
instrument is a factor level and this wrapper is how a level is applied:

* ``coredump``: ``CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1`` (the reporter's setting), with
  ``CUDA_COREDUMP_FILE`` pointed into a private temporary folder so dumps do not pile up in the
  working directory; whether a dump appeared, and its size, is recorded; the dump is deleted unless
  ``GPUREPRO_KEEP_COREDUMPS`` names a folder to move it to.
* ``compute-sanitizer``: memcheck (its default tool), log to a file so the program's stdout
  stays clean; the error summary is recorded.
* ``cuda-gdb``: a batch run from start (not the reporter's attach; an attach cannot be timed
  reproducibly). On a CUDA exception it records the exception, frame and the instructions at the
  faulting PC (the localisation the reporter could not get), then continues so the program
  still reports its own error and markers.

Tools come from the GPU node's PATH (then ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``): they are
not in PyPI wheels. When the tool is missing the wrapper prints a ``final`` record with status
``unsupported`` and reason ``tool not found: NAME`` and exits 3, so the harness classifies the
trial as not run instead of as a survival.

Output: the program's lines (JSON events, or the seed's text lines) are forwarded; the tool's
own chatter is not. One ``{"event": "instrument", ...}`` line is added; a JSON program's
``final`` record is re-emitted last with the instrument's findings under
``observations.instrument`` (the seed parser folds them in the same way). If the debugger stopped
the program on a CUDA exception and it never reported, a ``final`` naming the exception is
synthesised; otherwise a missing final is left for the harness to classify by exit status.
Exit status: the program's (or 3 when the tool is missing). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TOOLS = ("coredump", "compute-sanitizer", "cuda-gdb")
_PROGRAM_LINE = re.compile(r"^(\{.*\}|delay_cta=\d+ spin=\d+ mode=\d+ => .*|launch failed)$")
_EXCEPTION = re.compile(r"(CUDA_EXCEPTION_\d+)\s*,\s*([^.\n]+)")
_SANITIZER_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_SANITIZER_KEY = re.compile(r"Program hit|Invalid|Error|ERROR SUMMARY|CUDA_EXCEPTION|Target")
# gdb's own exit status says nothing about the program; this line does.
_INFERIOR_EXIT = re.compile(r"\[Inferior \d+ \(process \d+\) exited (normally|with code (\d+))\]")


def find_program(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / name).is_file():
            return str(Path(root) / "bin" / name)
    return None


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, separators=(",", ":")), flush=True)


def split_output(text: str) -> tuple[list[str], list[str]]:
    """(program lines, tool lines): the program's protocol/text lines versus everything else."""
    prog, tool = [], []
    for line in text.splitlines():
        (prog if _PROGRAM_LINE.match(line.strip()) else tool).append(line)
    return prog, tool


def last_json_final(lines: list[str]) -> int | None:
    """Index of the program's last JSON ``final`` line, if it printed one."""
    found = None
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("{"):
            try:
                if json.loads(s).get("event") == "final":
                    found = i
            except ValueError:
                pass
    return found


def has_final(lines: list[str]) -> bool:
    for line in lines:
        s = line.strip()
        if s.startswith("delay_cta=") or s == "launch failed":
            return True
        if s.startswith("{"):
            try:
                if json.loads(s).get("event") == "final":
                    return True
            except ValueError:
                pass
    return False


def gdb_commands() -> list[str]:
    # After a stop on a CUDA exception: where, what, then let the program see its error.
    # With no exception the program has exited and the later commands just fail harmlessly.
    cmds = ["set pagination off", "set confirm off", "run", "info cuda kernels", "bt 5",
            "x/6i $pc", "continue", "continue"]
    out: list[str] = []
    for c in cmds:
        out += ["-ex", c]
    return out


def run(tool: str, program: list[str]) -> int:
    name = "cuda-gdb" if tool == "cuda-gdb" else "compute-sanitizer"
    info: dict[str, Any] = {"event": "instrument", "tool": tool}
    if tool != "coredump":
        exe = find_program(name)
        if exe is None:
            reason = f"tool not found: {name} (not on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin)"
            emit({**info, "found": False})
            emit({"event": "final", "status": "unsupported", "reason": reason,
                  "counters": {"launches": 0}, "errors": {},
                  "observations": {"instrument": {"tool": tool, "found": False}}})
            return 3
        info.update(found=True, path=exe)

    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="gpurepro-instrument-") as tmp:
        if tool == "coredump":
            env["CUDA_ENABLE_COREDUMP_ON_EXCEPTION"] = "1"
            env["CUDA_COREDUMP_FILE"] = str(Path(tmp) / "core_%p.nvcudmp")
            argv = program
        elif tool == "compute-sanitizer":
            log = Path(tmp) / "sanitizer.log"
            argv = [exe, "--tool", "memcheck", "--print-limit", "20", "--log-file", str(log),
                    *program]
        else:
            argv = [exe, "-batch", "-nx", *gdb_commands(), "--args", *program]

        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", check=False)
        prog_lines, tool_lines = split_output(proc.stdout)
        json_final = last_json_final(prog_lines)
        for i, line in enumerate(prog_lines):
            if i != json_final:
                print(line, flush=True)
        info["exit_code"] = proc.returncode

        if tool == "coredump":
            dumps = sorted(Path(tmp).glob("core_*"))
            info["coredumps"] = [{"name": d.name, "bytes": d.stat().st_size} for d in dumps]
            keep = os.environ.get("GPUREPRO_KEEP_COREDUMPS")
            if keep and dumps:
                Path(keep).mkdir(parents=True, exist_ok=True)
                for d in dumps:
                    shutil.move(str(d), str(Path(keep) / d.name))
        elif tool == "compute-sanitizer":
            text = log.read_text(errors="replace") if log.exists() else ""
            m = _SANITIZER_SUMMARY.search(text)
            info["sanitizer_errors"] = int(m.group(1)) if m else None
            info["sanitizer_first"] = [ln[:300] for ln in text.splitlines()
                                       if _SANITIZER_KEY.search(ln)][:8]
        else:
            joined = "\n".join(tool_lines)
            m = _EXCEPTION.search(joined)
            info["cuda_exception"] = f"{m.group(1)} ({m.group(2).strip()})" if m else None
            if m:
                start = next(i for i, ln in enumerate(tool_lines) if m.group(1) in ln)
                info["stop_context"] = tool_lines[start:start + 16]
            ex = _INFERIOR_EXIT.search(joined)
            if ex:
                info["program_exit_code"] = 0 if ex.group(1) == "normally" else int(ex.group(2))
        info["tool_tail"] = tool_lines[-8:]

    emit(info)
    details = {k: v for k, v in info.items() if k != "event"}
    if json_final is not None:
        # A JSON program: the instrument's findings travel inside its own final record.
        final = json.loads(prog_lines[json_final])
        final.setdefault("observations", {})["instrument"] = details
        emit(final)
    elif not has_final(prog_lines) and info.get("cuda_exception"):
        # The debugger stopped the program on a CUDA exception and it never reported.
        exc = info["cuda_exception"].split(" ")[0]
        emit({"event": "final", "status": "cuda_error", "error": exc, "call": tool,
              "counters": {"launches": 1}, "errors": {exc: 1},
              "observations": {"instrument": details}})
    # Otherwise no final: the harness classifies from the exit status, as for any program.
    if proc.returncode < 0:  # the program died of a signal: die of the same one
        sys.stdout.flush()
        os.kill(os.getpid(), -proc.returncode)
    return int(info.get("program_exit_code", proc.returncode))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", choices=TOOLS, required=True)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        ap.error("give the program after --")
    return run(args.tool, program)


if __name__ == "__main__":
    sys.exit(main())
