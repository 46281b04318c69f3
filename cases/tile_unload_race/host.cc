// The reporter's load -> launch -> synchronize -> unload loop (seed/repro.cc), instrumented for the
// harness: JSON-lines events and crash records (native/README.md), every CUDA error terminal, and
// the factors the arms vary as options.
//
// Built with g++ alone by kit.host_driver (manifest.py); options: README.md, "host.cc options".
//
// Hot loop: only CUDA calls, relaxed counter increments (the cycles one also checks the
// --max-cycles budget), one relaxed load of the stop flag per iteration, and two plain stores
// per call publishing where the thread is (events.h, PhaseSlot: read by the crash handler): no
// locks unless --lock, no syscalls, no allocation, so it runs as fast as repro.cc
// (bench/loop_rate.py measures it).
// After the budget, main waits for every worker to finish its iteration (join_workers, still
// heartbeating) before the final record: a kernel that never returns keeps its worker in
// cuCtxSynchronize, so the trial is `hung` (final "hung" after --join-timeout, or killed at the
// harness's limit), never `ok`. The join adds nothing to the loop. Like repro.cc, main never
// tears down contexts: once the workers are done it _exit()s.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "../../native/crash.h"
#include "../../native/cuda_loader.h"
#include "../../native/events.h"
#include "../../native/host_kit.h"

namespace {

enum class Unload { never, three_in_four, always };
enum class Api { module, library };
enum class Lock { none, iteration, unload_launch, unload_load, launch };
const char *const kLockNames[] = {"none", "iteration", "unload-launch", "unload-load", "launch"};
const int kLockCount = 5;

struct Options {
  std::vector<std::string> cubins;
  int threads = 2;
  Unload unload = Unload::three_in_four;
  Lock lock = Lock::none;
  int contexts = 1;                  // 0: one per worker, created by the worker (per-thread)
  Api api = Api::module;
  unsigned preload = 0;
  unsigned prime = 0;
  double seconds = 20;
  unsigned long long max_cycles = 0;
  int heartbeat_ms = 1000;
  double join_timeout_s = 10;
};

const int M = 128;                   // as in repro.cc: three M x M float arrays
int g_dim[4] = {M, M, M, 1};         // shape0, shape1, stride0, stride1 (int32)

// Phase ids (PhaseSlot): index into kCallNames.
enum Call : unsigned {
  kStart, kModuleLoadData, kModuleGetFunction, kLaunchKernel, kCtxSynchronize, kModuleUnload,
  kLibraryLoadData, kLibraryGetKernel, kLibraryUnload, kLockWait, kCallCount
};
const char *const kCallNames[kCallCount] = {
    "start", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuCtxSynchronize",
    "cuModuleUnload", "cuLibraryLoadData", "cuLibraryGetKernel", "cuLibraryUnload",
    "lock-wait"};

struct Worker {
  int index = 0;
  const std::string *image = nullptr;
  CUcontext ctx = nullptr;
  CUdeviceptr buf[3] = {};
  void *args[15] = {};               // per array: pointer, then the four ints
  char reason[200] = {};             // text for an `unsupported` final; lives as long as we do
  pthread_t thread{};
};

Options g_opt;
CUdevice g_dev;
std::vector<std::string> g_images;
std::vector<Worker> g_workers;
std::mutex g_lock;                   // used only under --lock
Counter c_cycles, c_loads, c_launches, c_unloads;

// Record a failed call and stop everyone (host_kit.h: a first load the device cannot run is
// `unsupported`).
void fail(Worker &w, CUresult r, const char *call, bool first_load) {
  fail_call(r, call, first_load, w.reason, sizeof w.reason);
}

void setup_buffers(Worker &w, const CUdeviceptr *bufs) {
  for (int i = 0, a = 0; i < 3; ++i) {
    w.buf[i] = bufs[i];
    w.args[a++] = &w.buf[i];
    for (int q = 0; q < 4; ++q) w.args[a++] = &g_dim[q];
  }
}

bool alloc_buffers(CUdeviceptr *bufs, Worker &w) {
  for (int i = 0; i < 3; ++i)
    if (CUresult r = cu.cuMemAlloc(&bufs[i], M * M * 4)) {
      fail(w, r, "cuMemAlloc", false);
      return false;
    }
  return true;
}

// Holds g_lock for its scope when `on`; the wait is published as the phase "lock-wait".
struct MaybeLock {
  bool on;
  MaybeLock(bool o, PhaseSlot *ps) : on(o) {
    if (!on) return;
    phase_enter(ps, kLockWait);
    g_lock.lock();
    phase_exit(ps);
  }
  ~MaybeLock() { if (on) g_lock.unlock(); }
};

template <Api kApi>
void loop(Worker &w, PhaseSlot *ps) {
  const void *image = w.image->data();
  const Unload unload = g_opt.unload;
  const bool lock_iteration = g_opt.lock == Lock::iteration;
  const bool lock_launch = g_opt.lock == Lock::unload_launch || g_opt.lock == Lock::launch;
  const bool lock_load = g_opt.lock == Lock::unload_load;
  const bool lock_unload = g_opt.lock == Lock::unload_launch || lock_load;
  const uint64_t budget = g_opt.max_cycles ? g_opt.max_cycles : UINT64_MAX;
  for (unsigned n = 0; !stop_requested(); ++n) {
    MaybeLock whole(lock_iteration, ps);
    CUresult r;
    CUfunction f;
    CUmodule m = nullptr;
    CUlibrary lib = nullptr;
    {
      MaybeLock held(lock_load, ps);
      if constexpr (kApi == Api::module) {
        if (PHASED(ps, kModuleLoadData, cu.cuModuleLoadData(&m, image)))
          return fail(w, r, "cuModuleLoadData", n == 0);
      } else {
        if (PHASED(ps, kLibraryLoadData,
                   cu.cuLibraryLoadData(&lib, image, nullptr, nullptr, 0, nullptr, nullptr, 0)))
          return fail(w, r, "cuLibraryLoadData", n == 0);
      }
    }
    c_loads.inc();
    {
      MaybeLock held(lock_launch, ps);
      if constexpr (kApi == Api::module) {
        if (PHASED(ps, kModuleGetFunction, cu.cuModuleGetFunction(&f, m, "repro_kernel")))
          return fail(w, r, "cuModuleGetFunction", false);
      } else {
        CUkernel k;
        if (PHASED(ps, kLibraryGetKernel, cu.cuLibraryGetKernel(&k, lib, "repro_kernel")))
          return fail(w, r, "cuLibraryGetKernel", false);
        f = reinterpret_cast<CUfunction>(k);  // a CUkernel launches in the current context
      }
      if (PHASED(ps, kLaunchKernel,
                 cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, w.args, nullptr)))
        return fail(w, r, "cuLaunchKernel", false);
    }
    c_launches.inc();
    if (PHASED(ps, kCtxSynchronize, cu.cuCtxSynchronize()))
      return fail(w, r, "cuCtxSynchronize", false);
    if (unload == Unload::always || (unload == Unload::three_in_four && (n & 3))) {
      MaybeLock held(lock_unload, ps);
      if constexpr (kApi == Api::module) {
        if (PHASED(ps, kModuleUnload, cu.cuModuleUnload(m)))
          return fail(w, r, "cuModuleUnload", false);
      } else {
        if (PHASED(ps, kLibraryUnload, cu.cuLibraryUnload(lib)))
          return fail(w, r, "cuLibraryUnload", false);
      }
      c_unloads.inc();
    }
    if (c_cycles.inc() >= budget) stop_with("ok");  // once, at the end: not a hot-path lock
  }
}

void *worker(void *arg) {
  Worker &w = *static_cast<Worker *>(arg);
  install_thread_altstack();
  PhaseSlot *ps = phase_slot(w.index);  // first: a crash from here on names this thread
  if (g_opt.contexts == 0) {
    if (CUresult r = cu.cuCtxCreate(&w.ctx, 0, g_dev)) {
      fail(w, r, "cuCtxCreate", false);
      return nullptr;
    }
    CUdeviceptr bufs[3];
    if (!alloc_buffers(bufs, w)) return nullptr;
    setup_buffers(w, bufs);
  }
  if (CUresult r = cu.cuCtxSetCurrent(w.ctx)) {
    fail(w, r, "cuCtxSetCurrent", false);
    return nullptr;
  }
  if (g_opt.api == Api::module) loop<Api::module>(w, ps); else loop<Api::library>(w, ps);
  return nullptr;
}

[[noreturn]] void usage(const char *msg) {
  fprintf(stderr,
          "host: %s\nusage: host --cubin PATH [--cubin PATH ...] [--threads N] "
          "[--unload never|three-in-four|always] "
          "[--lock none|iteration|unload-launch|unload-load|launch] [--context shared|per-thread] "
          "[--contexts N] [--api module|library] [--preload K] [--prime P] [--seconds S] "
          "[--max-cycles N] [--heartbeat-ms MS] [--join-timeout S]\n",
          msg);
  exit(2);
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--cubin") o.cubins.push_back(val());
    else if (a == "--threads") o.threads = atoi(val().c_str());
    else if (a == "--serialize") o.lock = Lock::iteration;
    else if (a == "--contexts") o.contexts = atoi(val().c_str());
    else if (a == "--preload") o.preload = unsigned(strtoul(val().c_str(), nullptr, 10));
    else if (a == "--prime") o.prime = unsigned(strtoul(val().c_str(), nullptr, 10));
    else if (a == "--seconds") o.seconds = atof(val().c_str());
    else if (a == "--max-cycles") o.max_cycles = strtoull(val().c_str(), nullptr, 10);
    else if (a == "--heartbeat-ms") o.heartbeat_ms = atoi(val().c_str());
    else if (a == "--join-timeout") o.join_timeout_s = atof(val().c_str());
    else if (a == "--unload") {
      std::string v = val();
      if (v == "never") o.unload = Unload::never;
      else if (v == "three-in-four") o.unload = Unload::three_in_four;
      else if (v == "always") o.unload = Unload::always;
      else usage("bad --unload");
    } else if (a == "--lock") {
      std::string v = val();
      int i = 0;
      while (i < kLockCount && v != kLockNames[i]) ++i;
      if (i == kLockCount) usage("bad --lock");
      o.lock = Lock(i);
    } else if (a == "--context") {
      std::string v = val();
      if (v != "shared" && v != "per-thread") usage("bad --context");
      o.contexts = v == "per-thread" ? 0 : 1;
    } else if (a == "--api") {
      std::string v = val();
      if (v != "module" && v != "library") usage("bad --api");
      o.api = v == "library" ? Api::library : Api::module;
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (o.cubins.empty()) usage("at least one --cubin is required");
  // One phase slot per worker, and one for main while it preloads.
  if (o.threads < 1 || o.threads >= kMaxPhaseThreads)
    usage("--threads must be 1..63");
  if (o.contexts < 0 || o.contexts > o.threads) usage("--contexts must be 1..threads");
  if (o.prime && o.prime <= o.preload) usage("--prime must be larger than --preload");
  if ((o.preload || o.prime) && (o.contexts == 0 || o.api != Api::module))
    usage("--preload/--prime need contexts created by main and --api module");
  if (o.heartbeat_ms < 1) usage("--heartbeat-ms must be >= 1");
  return o;
}

std::string config_json() {
  static const char *unload_names[] = {"never", "three-in-four", "always"};
  std::string s = "{\"cubins\":[";
  for (size_t i = 0; i < g_images.size(); ++i)
    s += std::string(i ? "," : "") + "{\"path\":" + json_quote(g_opt.cubins[i].c_str()) +
         ",\"bytes\":" + std::to_string(g_images[i].size()) + "}";
  char tail[500];
  snprintf(tail, sizeof tail,
           "],\"threads\":%d,\"unload\":\"%s\",\"lock\":\"%s\",\"context\":\"%s\","
           "\"contexts\":%d,\"api\":\"%s\",\"preload\":%u,\"prime\":%u,\"seconds\":%g,"
           "\"max_cycles\":%llu,\"heartbeat_ms\":%d,\"join_timeout_s\":%g}",
           g_opt.threads, unload_names[int(g_opt.unload)], kLockNames[int(g_opt.lock)],
           g_opt.contexts == 0 ? "per-thread" : g_opt.contexts == 1 ? "shared" : "groups",
           g_opt.contexts == 0 ? g_opt.threads : g_opt.contexts,
           g_opt.api == Api::library ? "library" : "module", g_opt.preload, g_opt.prime,
           g_opt.seconds, g_opt.max_cycles, g_opt.heartbeat_ms, g_opt.join_timeout_s);
  return s + tail;
}

// --preload / --prime, on the main thread in the first context before any worker starts: each
// module loaded, its function fetched, launched once and synchronised, like a cycled module.
// Main publishes its phase in the slot after the workers' (a crash here names its call).
void preload_modules() {
  const unsigned total = g_opt.prime ? g_opt.prime : g_opt.preload;
  if (!total) return;
  PhaseSlot *ps = phase_slot(g_opt.threads);
  Worker &w = g_workers[0];
  static std::vector<CUmodule> held;  // kept loaded until _exit
  held.reserve(total);
  CUresult r;
  for (unsigned i = 0; i < total; ++i) {
    CUmodule m;
    CUfunction f;
    if (PHASED(ps, kModuleLoadData, cu.cuModuleLoadData(&m, w.image->data())))
      setup_failed(r, "cuModuleLoadData");
    held.push_back(m);
    if (PHASED(ps, kModuleGetFunction, cu.cuModuleGetFunction(&f, m, "repro_kernel")))
      setup_failed(r, "cuModuleGetFunction");
    if (PHASED(ps, kLaunchKernel,
               cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, w.args, nullptr)))
      setup_failed(r, "cuLaunchKernel");
    if (PHASED(ps, kCtxSynchronize, cu.cuCtxSynchronize())) setup_failed(r, "cuCtxSynchronize");
  }
  while (held.size() > g_opt.preload) {  // --prime: back down to K, newest first
    if (PHASED(ps, kModuleUnload, cu.cuModuleUnload(held.back())))
      setup_failed(r, "cuModuleUnload");
    held.pop_back();
  }
}

}  // namespace

int main(int argc, char **argv) {
  install_crash_handler();
  g_opt = parse(argc, argv);
  for (const std::string &path : g_opt.cubins) {
    std::ifstream in(path, std::ios::binary);
    if (!in) usage(("cannot read " + path).c_str());
    g_images.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  c_cycles = counter("cycles");
  c_loads = counter("loads");
  c_launches = counter("launches");
  c_unloads = counter("unloads");
  emit_start("host", config_json());

  cuda_load();  // no driver: final no_driver, exit 3
  set_error_namer(cu_error_name);
  if (CUresult r = cu.cuInit(0)) setup_failed(r, "cuInit");
  if (CUresult r = cu.cuDeviceGet(&g_dev, 0)) setup_failed(r, "cuDeviceGet");
  if (g_opt.api == Api::library && !cu.cuLibraryLoadData) {
    stop_with("unsupported", nullptr, nullptr, "driver lacks cuLibraryLoadData (CUDA 12.0+)");
    _exit(finish());
  }

  phase_names(kCallNames, kCallCount);
  phase_reserve(g_opt.threads);
  g_workers.resize(size_t(g_opt.threads));  // never resized again: workers hold references
  // Contexts made by main (--contexts N; N = 1 is `shared`), each with its own buffers.
  std::vector<CUcontext> contexts(size_t(g_opt.contexts));
  std::vector<CUdeviceptr> bufs(3 * contexts.size());
  for (size_t c = 0; c < contexts.size(); ++c) {
    if (CUresult r = cu.cuCtxCreate(&contexts[c], 0, g_dev)) setup_failed(r, "cuCtxCreate");
    for (size_t b = 0; b < 3; ++b)
      if (CUresult r = cu.cuMemAlloc(&bufs[3 * c + b], M * M * 4)) setup_failed(r, "cuMemAlloc");
  }
  for (int i = 0; i < g_opt.threads; ++i) {
    Worker &w = g_workers[size_t(i)];
    w.index = i;
    w.image = &g_images[size_t(i) % g_images.size()];
    if (!contexts.empty()) {
      size_t c = size_t(i) % contexts.size();
      w.ctx = contexts[c];
      setup_buffers(w, &bufs[3 * c]);
    }
  }
  if (!contexts.empty()) {
    if (CUresult r = cu.cuCtxSetCurrent(contexts[0])) setup_failed(r, "cuCtxSetCurrent");
    preload_modules();
  }
  for (Worker &w : g_workers) pthread_create(&w.thread, nullptr, worker, &w);

  run_until(g_opt.seconds, &c_cycles, g_opt.max_cycles, g_opt.heartbeat_ms);
  // The measured loop is over; from here on only main waits (for each worker's last iteration).
  std::vector<pthread_t> threads;
  for (Worker &w : g_workers) threads.push_back(w.thread);
  int stuck = join_workers(threads.data(), int(threads.size()), g_opt.join_timeout_s,
                           g_opt.heartbeat_ms);
  // A stuck worker (final "hung") is left for _exit; no more driver calls beside it.
  _exit(finish(stuck ? "" : device_json(g_dev)));
}
