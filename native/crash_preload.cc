// libgpurepro_crash.so: the crash handler for programs we do not modify (the reporter's repro):
//   LD_PRELOAD=/abs/path/libgpurepro_crash.so ./repro kernel.cubin 20
// leaves the same GPUREPRO_CRASH line on stderr as our own drivers (with empty counters).
// Build (-fvisibility=hidden: export nothing that could clash with the host program's symbols):
//   g++ -O2 -pthread -std=c++17 -fno-omit-frame-pointer -static-libstdc++ -static-libgcc -shared -fPIC -fvisibility=hidden native/crash_preload.cc native/crash.cc native/events.cc -o libgpurepro_crash.so -ldl
// Limitation: only the thread that runs constructors (the main thread) gets an alternate signal
// stack, so a stack overflow in another thread dies without a record; other faults are covered.
#include "crash.h"

__attribute__((constructor)) static void gpurepro_crash_preload_init() { install_crash_handler(); }
