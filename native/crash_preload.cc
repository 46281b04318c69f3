// libgpurepro_crash.so: the crash handler for programs we do not modify (the reporter's repro):
//   LD_PRELOAD=/abs/path/libgpurepro_crash.so ./repro kernel.cubin 20
// leaves the same GPUREPRO_CRASH line on stderr as our own drivers (with empty counters).
// Build (-fvisibility=hidden: export nothing that could clash with the host program's symbols):
//   g++ -O2 -pthread -std=c++17 -fno-omit-frame-pointer -static-libstdc++ -static-libgcc -shared -fPIC -fvisibility=hidden native/crash_preload.cc native/crash.cc native/events.cc -o libgpurepro_crash.so -ldl
// Limitation: only the thread that runs constructors (the main thread) gets an alternate signal
// stack, so a stack overflow in another thread dies without a record; other faults are covered.
//
// A Python trial driver (src/gpurepro/case/driver.py) finds the gpurepro_* functions below
// through ctypes (dlsym in the global scope, where LD_PRELOAD puts this object) and uses them to
// put its counters and thread phases where the handler reads them, and to run the handler before
// Python's faulthandler (whose Python frames then follow the record). They are the only symbols
// exported.
#include <stdint.h>

#include <atomic>

#include "crash.h"
#include "events.h"

__attribute__((constructor)) static void gpurepro_crash_preload_init() { install_crash_handler(); }

#define GPUREPRO_EXPORT extern "C" __attribute__((visibility("default")))

// install_crash_handler_last(): call after faulthandler.enable().
GPUREPRO_EXPORT void gpurepro_crash_install_last() { install_crash_handler_last(); }

// An alternate signal stack for the calling thread (a worker thread's stack overflow then still
// leaves a record).
GPUREPRO_EXPORT void gpurepro_thread_altstack() { install_thread_altstack(); }

// The 64-bit word of counter `name` in the table the crash record reports (registered on first
// use; `name` must live as long as the process). The caller stores the value; the handler reads it.
GPUREPRO_EXPORT uint64_t *gpurepro_counter(const char *name) {
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t), "plain 64-bit word");
  return reinterpret_cast<uint64_t *>(counter(name).v);
}

// phase_names(): the call names, living as long as the process.
GPUREPRO_EXPORT void gpurepro_phase_names(const char *const *names, int n) { phase_names(names, n); }

// phase_reserve(n) before the workers start.
GPUREPRO_EXPORT void gpurepro_phase_reserve(int n) { phase_reserve(n); }

// The calling thread's phase word for worker `index` (records the thread's id, as phase_slot()):
// the caller stores (calls << 16) | (call id << 1) | inside, as phase_enter/phase_exit do.
GPUREPRO_EXPORT uint64_t *gpurepro_phase_slot(int index) {
  if (index < 0 || index >= kMaxPhaseThreads) return nullptr;
  return reinterpret_cast<uint64_t *>(&phase_slot(index)->word);
}
