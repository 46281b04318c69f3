"""`gpurepro new <name>`: a case folder that builds, runs and is decided from its first minute.

The scaffold is a working case, not a template to fill before anything works: a plain CUDA
kernel built with the pinned nvcc wheels, a host driver on native/ that launches it in a loop,
heartbeats, joins its worker (so a kernel that never returns is `hung`, not `survived`) and
names the call that failed, two arms, a claim, and a README with the rules. The author then
replaces the kernel, the loop and the arms with the bug's.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError

NAME = re.compile(r"^[a-z][a-z0-9_]*$")

MANIFEST = '''"""Case {name}: <one line: the bug, as its report states it>.

Report: <link to the issue>. Question: <what this case asks, and who could own the answer>.
"""

from __future__ import annotations

from gpurepro.case import (
    Arm,
    Artifact,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    TrialCommand,
    TrialContext,
    load_sibling,
)

_verdict = load_sibling(__file__, "verdict")

# A plain `nvcc -cubin` needs the compiler (nvcc), its front end (nvvm), the CUDA headers (crt)
# and the runtime headers (runtime), all of one release: pin the family together.
_CUDA = [
    "nvidia-cuda-nvcc==13.3.73",
    "nvidia-nvvm==13.3.73",
    "nvidia-cuda-crt==13.3.73",
    "nvidia-cuda-runtime==13.3.*",
]
_GXX = ("{{gxx}}", "-O2", "-pthread", "-std=c++17", "-fno-omit-frame-pointer",
        "-static-libstdc++", "-static-libgcc")
_NATIVE = ("native/cuda_loader.cc", "native/events.cc", "native/crash.cc")

ARTIFACTS = [
    Artifact(
        name="host",
        description="host driver: loads the cubin, launches its kernel in a loop (native/ protocol)",
        command=(*_GXX, "{{case}}/host.cc", *_NATIVE, "-o", "{{out}}/host", "-ldl"),
        outputs=("host",),
        sources=("host.cc", *_NATIVE, "native/cuda_loader.h", "native/events.h",
                 "native/crash.h", "native/cuda_types.h"),
        tools=("gxx",),
    ),
    Artifact(
        name="kernel",
        description="the kernel under test, nvcc -cubin",
        command=("{{nvcc}}", "-arch={{arch}}", "-cubin", "-o", "{{out}}/kernel.cubin",
                 "{{case}}/kernel.cu"),
        outputs=("kernel.cubin",),
        sources=("kernel.cu",),
    ),
]


def trial_command(ctx: TrialContext) -> TrialCommand:
    f = ctx.factors
    return TrialCommand(argv=(str(ctx.artifacts["host"]), "--cubin", str(ctx.artifacts["kernel"]),
                              "--mode", f["mode"], "--seconds", str(ctx.budget.duration_s),
                              "--max-launches", str(ctx.budget.max_exposure)))


CASE = Case(
    name="{name}",
    question="<the question this case answers>",
    report_url="",
    toolchains={{"sm_90": _CUDA, "sm_80": _CUDA, "sm_100": _CUDA, "sm_120": _CUDA}},
    artifacts=ARTIFACTS,
    factors={{"mode": Factor(("normal", "trap"), "normal",
                            "normal: the kernel as is; trap: the kernel executes a trap (a control "
                            "that must end as a CUDA error)")}},
    arms=[
        Arm("baseline", {{}}, "the kernel as it is"),
        Arm("trap", {{"mode": "trap"}}, "control: the kernel traps"),
    ],
    baseline="baseline",
    claims=[
        Claim("trap-is-launch-failure", arm="trap", kind="outcome", outcome="cuda_error",
              supported="The trap control ends as a CUDA error in {{count}} of {{n}} trials: the "
                        "driver reports a faulting kernel here."),
    ],
    trial_command=trial_command,
    verdict=_verdict.verdict,
    devices=Devices(targets={{"9.0": "sm_90", "8.0": "sm_80", "10.0": "sm_100", "12.0": "sm_120"}}),
    exposure=Exposure(counter="launches", unit="launches"),
    # A short limit: an arm that hangs costs trial_timeout_s per trial.
    defaults=Defaults(trials_per_arm=5, duration_s=2.0, trial_timeout_s=10.0),
)
'''

VERDICT = '''"""The {name} verdict: measurements and decisions, no statistics (the harness decides claims)."""

from __future__ import annotations

from typing import Any

from gpurepro.analyze.views import Analysis


def verdict(analysis: Analysis) -> dict[str, Any]:
    """analysis.arms[name] (counts per arm), analysis.decision(claim), analysis.trials, ...:
    the result document's typed views (gpurepro/analysis.py)."""
    base = analysis.arms[analysis.baseline]
    sentences = [f"{{arm}}: {{', '.join(f'{{k}} {{v}}' for k, v in s.outcomes.items())}}."
                 for arm, s in analysis.arms.items()]
    status = "reproduced" if base.failures else "not_reproduced"
    return {{"status": status, "sentences": sentences, "owner": None, "owner_because": [],
            "next": [] if analysis.supported("trap-is-launch-failure") else
            ["The trap control was not decided: check that the driver reports kernel faults."],
            "hypotheses": []}}
'''

KERNEL = '''// The kernel under test. `trap` makes the control arm fault on purpose.
extern "C" __global__ void kernel(float *out, int trap) {{
  if (trap) __trap();
  out[threadIdx.x] = threadIdx.x;
}}
'''

HOST = r'''// Host driver for case {name}: load the cubin, launch `kernel` in a loop on a worker thread,
// heartbeat from main, join the worker before the final record (a kernel that never returns
// keeps the join waiting, so the harness kills the trial at its limit: `hung`, never `ok`),
// and name the call that failed. Protocol: native/README.md.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <iterator>
#include <string>

#include "../../native/crash.h"
#include "../../native/cuda_loader.h"
#include "../../native/events.h"

namespace {{

std::string g_image;
int g_trap = 0;
Counter c_launches;
uint64_t g_max_launches = 0;

void *work(void *) {{
  install_thread_altstack();
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr out;
  CUresult r;
  // cu_ok records a failed call, stops everyone and names the call in the final record.
  if (!cu_ok(cu.cuDeviceGet(&dev, 0), "cuDeviceGet")) return nullptr;
  if (!cu_ok(cu.cuCtxCreate(&ctx, 0, dev), "cuCtxCreate")) return nullptr;
  if ((r = cu.cuModuleLoadData(&mod, g_image.data()))) {{
    errors_record(r);
    bool cannot = r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE;
    stop_with(cannot ? "unsupported" : "cuda_error", cu_error_name(r), "cuModuleLoadData",
              cannot ? "the device cannot load this cubin" : nullptr);
    return nullptr;
  }}
  if (!cu_ok(cu.cuModuleGetFunction(&fn, mod, "kernel"), "cuModuleGetFunction")) return nullptr;
  if (!cu_ok(cu.cuMemAlloc(&out, 32 * sizeof(float)), "cuMemAlloc")) return nullptr;
  void *args[] = {{&out, &g_trap}};
  const uint64_t budget = g_max_launches ? g_max_launches : UINT64_MAX;
  while (!stop_requested()) {{
    if (!cu_ok(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel")) break;
    if (!cu_ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")) break;
    if (c_launches.inc() >= budget) {{ stop_with("ok"); break; }}
  }}
  return nullptr;
}}

}}  // namespace

int main(int argc, char **argv) {{
  const char *cubin = nullptr, *mode = "normal";
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {{
    if (!strcmp(argv[i], "--cubin")) cubin = argv[i + 1];
    else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-launches")) g_max_launches = strtoull(argv[i + 1], nullptr, 10);
  }}
  if (!cubin) {{ fprintf(stderr, "usage: host --cubin K.cubin [--mode normal|trap] [--seconds S]\n"); return 2; }}
  std::ifstream in(cubin, std::ios::binary);
  g_image.assign(std::istreambuf_iterator<char>(in), {{}});
  g_trap = !strcmp(mode, "trap");
  install_crash_handler();
  set_error_namer(cu_error_name);
  c_launches = counter("launches");
  emit_start("{name}/host", std::string("{{\"mode\":") + json_quote(mode) + "}}");
  cuda_load();
  if (CUresult r = cu.cuInit(0)) {{ stop_with("no_driver", cu_error_name(r), "cuInit", "cuInit failed"); return finish(); }}
  pthread_t worker;
  pthread_create(&worker, nullptr, work, nullptr);
  run_until(seconds, nullptr, 0, 200);
  // Stop the loop and wait for the worker, heartbeating: a kernel that never returns keeps it
  // in cuCtxSynchronize, and with no deadline the harness's limit ends the trial as `hung`.
  join_workers(&worker, 1, 0, 200);
  return finish();
}}
'''

README = '''# Case `{name}`

<The bug in two sentences, with the link to its report.>

## Question

<What the case asks; which owners are possible (driver, compiler, library, user code).>

## Arms and claims

| arm | what it varies | claim |
| --- | --- | --- |
| `baseline` | the kernel as it is | – |
| `trap` | the kernel traps (a control) | `trap-is-launch-failure`: ends as a CUDA error |

Every finding in this README names the arm or claim that shows it; what no arm isolates is a
hypothesis and says so.

## Rules the harness applies (see the top-level README, "Adding a case")

- The host driver speaks native/'s JSON-lines protocol: a `final` record with status `ok`,
  `cuda_error` (with `error` and the failing `call`), `unsupported` or `no_driver`. A final `ok`
  with the exposure counter (`launches`) at 0 is `invalid`; exit 0 with no final record is a
  `harness_error`; a fatal signal is `crashed`; the wall-clock limit (`trial_timeout_s`) is `hung`.
- Without a reporter's program there is no `seed/` folder; with one, `seed/` holds the
  reporter's files exactly as filed and runs as its own arm.

## Run

    nox -s {name} -- --arch sm_90
'''


def create(name: str, root: Path) -> list[Path]:
    """Write cases/<name>/ (manifest, verdict, kernel, host driver, README); return the files."""
    if not NAME.match(name):
        raise UsageError(f"{name!r}: a case name is lower-case letters, digits and _ "
                         f"(it names the folder and the nox session)")
    folder = root / "cases" / name
    if folder.exists():
        raise UsageError(f"{folder} exists; choose another name")
    files = {"manifest.py": MANIFEST, "verdict.py": VERDICT, "kernel.cu": KERNEL,
             "host.cc": HOST, "README.md": README}
    folder.mkdir(parents=True)
    written = []
    for filename, template in files.items():
        path = folder / filename
        path.write_text(template.format(name=name))
        written.append(path)
    return written
