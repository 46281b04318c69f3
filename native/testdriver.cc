// A fake trial driver for the harness's own tests: speaks the protocol (native/README.md) and
// fails in each way a real trial can, without CUDA or a GPU.
//   testdriver MODE [--seconds S] [--cycles N] [--heartbeat-ms MS] [--join-timeout S] [--nap-us US]
//                   [--mappings N]
//   MODE: ok crash abort hang stuck cuda_error unsupported silent noprogress no_driver garbage
//         crash_other_runs stall
//   stuck: a worker makes progress, then never returns (a kernel that never ends, as seen from
//   cuCtxSynchronize); main joins its workers with join_workers (--join-timeout, 0: for ever).
//   crash_other_runs: worker 0 faults inside a published call while worker 1 goes on publishing
//   calls through the crash handler's slow part (made slow by N extra mappings, default 20000,
//   in /proc/self/maps); before the fault worker 0 prints what worker 1 had published then.
//   stall: both workers make progress, then sit inside a published call (fake_sync) for ever
//   while main goes on heartbeating: the counters stop moving (a hang as the race shows it).
// Build:
//   g++ -O2 -pthread -std=c++17 -fno-omit-frame-pointer -static-libstdc++ -static-libgcc native/testdriver.cc native/events.cc native/crash.cc -o testdriver -ldl
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "crash.h"
#include "cuda_types.h"
#include "events.h"

namespace {

Counter c_cycles, c_loads, c_launches, c_unloads;

void nap_us(long us) {
  timespec ts{us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, nullptr);
}

// The pause of one fake cycle (--nap-us): 200 us by default; 0 makes a trial reach a budget of
// a real GPU's size in a fraction of a second.
long cycle_nap_us = 200;

// One fake load/launch/unload cycle, with the same counters a host driver keeps.
void fake_cycle(unsigned n) {
  c_loads.inc();
  c_launches.inc();
  if (n & 3) c_unloads.inc();
  c_cycles.inc();
  if (cycle_nap_us > 0) nap_us(cycle_nap_us);
}

// noinline + a volatile pointer: a real fault in a named frame of this binary.
__attribute__((noinline)) void crash_now() {
  static volatile uintptr_t where = 0x10;  // volatile: the compiler cannot prove it bad
  *reinterpret_cast<volatile int *>(where) = 1;
}

// Worker for the fatal modes: make visible progress, then fail from a non-main thread (as the
// race does).
void progress_then(void (*fail)()) {
  install_thread_altstack();
  for (unsigned n = 0; n < 50; ++n) fake_cycle(n);
  fail();
}

// Worker for ok / noprogress / stuck: cycles until the stop; `stuck` blocks in its 20th cycle.
// The first cycle comes before the stop is looked at: a loaded machine can keep a new thread off
// the CPU for the whole of a short budget, and a trial that ran its course made progress.
void *cycle_worker(void *arg) {
  const std::string mode = static_cast<const char *>(arg);
  if (mode == "noprogress") return nullptr;  // counters stay at zero
  unsigned n = 0;
  do {
    if (mode == "stuck" && n == 20)
      for (;;) pause();  // the synchronize that never returns
    fake_cycle(n++);
  } while (!stop_requested());
  return nullptr;
}

// ---- crash_other_runs: what a crash record says about a thread that runs on ----

// Phase ids (PhaseSlot): worker 0 faults inside a fake launch, worker 1 loops over fake unloads.
const char *const kRunOnCalls[] = {"none", "fake_launch", "fake_unload"};
enum { kFakeLaunch = 1, kFakeUnload = 2 };
// Worker 1 holds still (its slot unchanged) from g_other_held until g_fault_next, so the value
// worker 0 reads just before faulting is what the slot holds at the fault.
std::atomic<bool> g_other_held{false}, g_fault_next{false};
// How long worker 1 waits after the fault before it publishes again: long beside the handler's
// entry snapshot (microseconds), short beside its scan of a long /proc/self/maps (milliseconds).
const long kSnapshotGraceUs = 2000;

void fake_call(PhaseSlot *ps, unsigned call, const Counter &c) {
  phase_enter(ps, call);
  c.inc();
  phase_exit(ps);
}

// Two mappings per step (PROT_READ pages between PROT_NONE ones do not merge): a long
// /proc/self/maps, as a process with thousands of mappings has.
void add_mappings(long n) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  void *mem = mmap(nullptr, size_t(2 * n) * page, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return;
  for (long i = 0; i < n; ++i) mprotect(static_cast<char *>(mem) + size_t(2 * i) * page, page,
                                        PROT_READ);
}

// ---- stall: both workers stop inside a published call (what a hung race looks like) ----
const char *const kStallCalls[] = {"none", "fake_launch", "fake_sync"};
enum { kStallLaunch = 1, kStallSync = 2 };

void *stall_worker(void *arg) {
  PhaseSlot *ps = phase_slot(int(reinterpret_cast<intptr_t>(arg)));
  for (unsigned n = 0; n < 40; ++n) {
    fake_call(ps, kStallLaunch, c_launches);
    c_cycles.inc();
    nap_us(2000);
  }
  phase_enter(ps, kStallSync);
  for (;;) pause();  // a synchronize that never returns, in both workers
}

void *other_worker(void *) {
  PhaseSlot *ps = phase_slot(1);
  for (int i = 0; i < 1000; ++i) fake_call(ps, kFakeUnload, c_unloads);
  g_other_held.store(true, std::memory_order_release);
  while (!g_fault_next.load(std::memory_order_acquire)) sched_yield();
  nap_us(kSnapshotGraceUs);
  for (;;) fake_call(ps, kFakeUnload, c_unloads);  // until the process dies of the fault
}

// Worker 0: a few calls, then read worker 1's slot (held still), print it, fault inside a call.
void fault_while_other_runs() {
  install_thread_altstack();
  PhaseSlot *ps = phase_slot(0);
  for (int i = 0; i < 3; ++i) fake_call(ps, kFakeLaunch, c_launches);
  while (!g_other_held.load(std::memory_order_acquire)) sched_yield();
  int tid;
  const char *call;
  bool inside;
  uint64_t calls;
  phase_read(1, &tid, &call, &inside, &calls);
  char line[200];
  int n = snprintf(line, sizeof line,
                   "{\"event\":\"before_fault\",\"other\":{\"call\":\"%s\",\"inside\":%s,"
                   "\"calls\":%llu},\"unloads\":%llu,\"launches\":%llu}\n",
                   call ? call : "", inside ? "true" : "false", (unsigned long long)calls,
                   (unsigned long long)c_unloads.get(), (unsigned long long)c_launches.get());
  (void)!write(1, line, size_t(n));
  phase_enter(ps, kFakeLaunch);
  c_launches.inc();
  g_fault_next.store(true, std::memory_order_release);
  crash_now();
}

int usage() {
  fprintf(stderr,
          "usage: testdriver ok|crash|abort|hang|stuck|stall|cuda_error|unsupported|silent|noprogress|"
          "no_driver|garbage|crash_other_runs [--seconds S] [--cycles N] [--heartbeat-ms MS] "
          "[--join-timeout S] [--mappings N]\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  install_crash_handler();
  if (argc < 2) return usage();
  std::string mode = argv[1];
  double seconds = 1.0;
  unsigned long long cycles = 0;
  int heartbeat_ms = 100;
  double join_timeout_s = 0;
  long mappings = 20000;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    if (a == "--seconds") seconds = atof(argv[++i]);
    else if (a == "--cycles") cycles = strtoull(argv[++i], nullptr, 10);
    else if (a == "--heartbeat-ms") heartbeat_ms = atoi(argv[++i]);
    else if (a == "--nap-us") cycle_nap_us = atol(argv[++i]);
    else if (a == "--join-timeout") join_timeout_s = atof(argv[++i]);
    else if (a == "--mappings") mappings = atol(argv[++i]);
    else return usage();
  }
  if (mode == "silent") return 0;
  if (mode == "garbage") {
    const char text[] = "this is not JSON\n{\"event\": truncated\n\x01\x02 binary junk\n";
    (void)!write(1, text, sizeof text - 1);
    return 0;
  }
  if (mode == "no_driver") {
    emit_final("no_driver", "\"reason\":\"libcuda.so.1: cannot open shared object file: No "
                            "such file or directory (simulated by testdriver)\"");
    return 3;
  }

  c_cycles = counter("cycles");
  c_loads = counter("loads");
  c_launches = counter("launches");
  c_unloads = counter("unloads");
  char config[160];
  snprintf(config, sizeof config, "{\"mode\":\"%s\",\"seconds\":%g,\"cycles\":%llu}",
           mode.c_str(), seconds, cycles);

  if (mode == "hang") {
    // A child in our process group, so tests can check that killing the group leaves no orphan.
    pid_t child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    snprintf(config, sizeof config, "{\"mode\":\"hang\",\"child_pid\":%d}", int(child));
    emit_start("testdriver", config);
    for (;;) pause();
  }

  emit_start("testdriver", config);
  if (mode == "crash" || mode == "abort") {
    std::thread t(progress_then, mode == "crash" ? crash_now : abort);
    t.join();
    return 1;  // not reached
  }
  if (mode == "crash_other_runs") {
    phase_names(kRunOnCalls, 3);
    phase_reserve(2);
    add_mappings(mappings);
    pthread_t other;
    pthread_create(&other, nullptr, other_worker, nullptr);
    std::thread t(fault_while_other_runs);
    t.join();
    return 1;  // not reached
  }
  if (mode == "cuda_error" || mode == "unsupported") {
    for (unsigned n = 0; n < 20; ++n) fake_cycle(n);
    int code = mode == "cuda_error" ? CUDA_ERROR_LAUNCH_FAILED : CUDA_ERROR_NO_BINARY_FOR_GPU;
    errors_record(code);
    if (mode == "cuda_error")
      stop_with("cuda_error", cu_error_name_builtin(code), "cuCtxSynchronize");
    else
      stop_with("unsupported", cu_error_name_builtin(code), "cuModuleLoadData",
                "CUDA_ERROR_NO_BINARY_FOR_GPU at the first cuModuleLoadData (simulated)");
    return finish();
  }
  if (mode == "stall") {
    // Heartbeats go on (main runs them) while both workers sit in fake_sync: no progress.
    phase_names(kStallCalls, 3);
    phase_reserve(2);
    pthread_t workers[2];
    for (intptr_t i = 0; i < 2; ++i)
      pthread_create(&workers[i], nullptr, stall_worker, reinterpret_cast<void *>(i));
    run_until(seconds, &c_cycles, cycles, heartbeat_ms);
    join_workers(workers, 2, join_timeout_s, heartbeat_ms);
    _exit(finish());
  }
  if (mode == "ok" || mode == "noprogress" || mode == "stuck") {
    // As a host driver does it: workers, heartbeats until the budget, join, final record.
    pthread_t workers[2];
    for (pthread_t &t : workers) pthread_create(&t, nullptr, cycle_worker, argv[1]);
    run_until(seconds, &c_cycles, cycles, heartbeat_ms);
    join_workers(workers, 2, join_timeout_s, heartbeat_ms);
    _exit(finish());  // a stuck worker (final "hung") is left for _exit
  }
  return usage();
}
