"""What case manifests share: the recipes of a host driver on native/ and of the crash object.

A host driver is one C++ file of the case linked with the shared native/ sources (the libcuda
loader, the JSON-lines events, the crash handler), built with the pinned host compiler so that
the same inputs give the same binary in any checkout. ``host_driver`` is the artifact;
``GXX``, ``NATIVE`` and ``NATIVE_SOURCES`` are its parts, for artifacts that build something
else from them. ``crash_preload`` is the crash handler as an LD_PRELOAD object, which a Python
driver's trial names as ``preload`` (TrialContext.python_driver): a fault inside libcuda then
leaves the native crash record before faulthandler's Python frames.
"""

from __future__ import annotations

from .model import Artifact

# What other modules use; the rest is this module's own.
__all__ = ["crash_preload", "GXX", "host_driver", "NATIVE", "NATIVE_SOURCES"]

# g++ for a host driver: optimised, threads, C++17, frame pointers kept (the crash handler's
# frames), and the C++ runtime linked in (the binary runs on GPU nodes with another libstdc++).
GXX = ("{gxx}", "-O2", "-pthread", "-std=c++17", "-fno-omit-frame-pointer",
       "-static-libstdc++", "-static-libgcc")
# The native/ sources a host driver is linked with, and with their headers: the build inputs.
NATIVE = ("native/cuda_loader.cc", "native/events.cc", "native/crash.cc")
NATIVE_SOURCES = (*NATIVE, "native/cuda_loader.h", "native/events.h", "native/crash.h",
                  "native/cuda_types.h", "native/host_kit.h")


def host_driver(name: str, source: str, description: str, output: str | None = None) -> Artifact:
    """The artifact ``name``: ``source`` (in the case folder) linked with native/ into
    ``{out}/<output>`` (default: ``name``)."""
    output = output or name
    return Artifact(name=name, description=description,
                    command=(*GXX, f"{{case}}/{source}", *NATIVE, "-o", f"{{out}}/{output}", "-ldl"),
                    outputs=(output,), sources=(source, *NATIVE_SOURCES), tools=("gxx",))


# The crash object's sources: the LD_PRELOAD entry point, the handler and the event writer.
CRASH_SOURCES = ("native/crash_preload.cc", "native/crash.cc", "native/events.cc",
                 "native/crash.h", "native/events.h", "native/cuda_types.h")


def crash_preload(name: str = "crash_preload") -> Artifact:
    """The artifact ``name``: libgpurepro_crash.so, the crash handler a Python driver's trial
    preloads (every symbol hidden but its entry points, so it binds nothing of the driver's)."""
    return Artifact(
        name=name,
        description=("the crash handler as an LD_PRELOAD object: the native crash record of a "
                     "Python driver, written before faulthandler's Python frames"),
        command=(*GXX, "-shared", "-fPIC", "-fvisibility=hidden", "-Wl,--exclude-libs,ALL",
                 *CRASH_SOURCES[:3], "-o", "{out}/libgpurepro_crash.so", "-ldl"),
        outputs=("libgpurepro_crash.so",), sources=CRASH_SOURCES, tools=("gxx",))
