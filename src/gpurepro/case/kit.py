"""What case manifests share: the recipe of a host driver on native/.

A host driver is one C++ file of the case linked with the shared native/ sources (the libcuda
loader, the JSON-lines events, the crash handler), built with the pinned host compiler so that
the same inputs give the same binary in any checkout. ``host_driver`` is the artifact;
``GXX``, ``NATIVE`` and ``NATIVE_SOURCES`` are its parts, for artifacts that build something
else from them (a preloaded crash handler, say).
"""

from __future__ import annotations

from .model import Artifact

# g++ for a host driver: optimised, threads, C++17, frame pointers kept (the crash handler's
# frames), and the C++ runtime linked in (the binary runs on GPU nodes with another libstdc++).
GXX = ("{gxx}", "-O2", "-pthread", "-std=c++17", "-fno-omit-frame-pointer",
       "-static-libstdc++", "-static-libgcc")
# The native/ sources a host driver is linked with, and with their headers: the build inputs.
NATIVE = ("native/cuda_loader.cc", "native/events.cc", "native/crash.cc")
NATIVE_SOURCES = (*NATIVE, "native/cuda_loader.h", "native/events.h", "native/crash.h",
                  "native/cuda_types.h")


def host_driver(name: str, source: str, description: str, output: str | None = None) -> Artifact:
    """The artifact ``name``: ``source`` (in the case folder) linked with native/ into
    ``{out}/<output>`` (default: ``name``)."""
    output = output or name
    return Artifact(name=name, description=description,
                    command=(*GXX, f"{{case}}/{source}", *NATIVE, "-o", f"{{out}}/{output}", "-ldl"),
                    outputs=(output,), sources=(source, *NATIVE_SOURCES), tools=("gxx",))
