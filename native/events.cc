// The JSON-lines side of the protocol (native/README.md); see events.h for the API.
// Compiled into every driver: g++ ... native/events.cc ... (see host.cc / testdriver.cc).
#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include "cuda_types.h"

std::atomic<int> g_stop_flag{0};

namespace {

// One cache line per counter: two workers bumping different counters do not false-share.
struct alignas(64) Slot {
  std::atomic<uint64_t> v{0};
};
Slot g_counters[kMaxCounters];
const char *g_counter_names[kMaxCounters];
std::atomic<int> g_ncounters{0};

struct alignas(64) ErrSlot {
  std::atomic<int> code{0};  // 0 = free (CUDA_SUCCESS is never recorded)
  std::atomic<uint64_t> count{0};
};
ErrSlot g_errors[kMaxErrorCodes];
const char *(*g_namer)(int) = cu_error_name_builtin;

// The first stop_with() call; read by finish(). Off the hot path, so a mutex is fine.
std::mutex g_stop_mu;
const char *g_stop_status, *g_stop_error, *g_stop_call, *g_stop_reason;

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
uint64_t g_t0_ns;
// Early constructor so `t` starts at load time, before other constructors (crash_preload's).
__attribute__((constructor(101))) void init_t0() { g_t0_ns = mono_ns(); }

void write_line(const std::string &line) {
  const char *p = line.data();
  size_t n = line.size();
  while (n) {
    ssize_t w = write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // stdout gone: nothing sensible left to do
    p += w;
    n -= size_t(w);
  }
}

std::string fmt_t() {
  char b[32];
  snprintf(b, sizeof b, "%.3f", elapsed_s());
  return b;
}

std::string counters_json() {
  std::string s = "{";
  for (int i = 0, n = counters_count(); i < n; ++i) {
    if (i) s += ',';
    s += json_quote(g_counter_names[i]) + ':' + std::to_string(counter_value(i));
  }
  return s + '}';
}

std::string errors_json() {
  std::string s = "{";
  bool first = true;
  for (ErrSlot &e : g_errors) {
    int code = e.code.load(std::memory_order_relaxed);
    if (!code) continue;
    const char *name = g_namer ? g_namer(code) : nullptr;
    std::string key = name ? name : "CUDA_ERROR_" + std::to_string(code);
    if (!first) s += ',';
    first = false;
    s += json_quote(key.c_str()) + ':' + std::to_string(e.count.load(std::memory_order_relaxed));
  }
  return s + '}';
}

}  // namespace

Counter counter(const char *name) {
  int n = g_ncounters.load();
  for (int i = 0; i < n; ++i)
    if (std::string(g_counter_names[i]) == name) return Counter{&g_counters[i].v};
  if (n == kMaxCounters) {
    fprintf(stderr, "events: more than %d counters\n", kMaxCounters);
    abort();
  }
  g_counter_names[n] = name;
  g_ncounters.store(n + 1);  // publish after the name is set (the crash handler reads both)
  return Counter{&g_counters[n].v};
}

namespace {
PhaseSlot g_phases[kMaxPhaseThreads];
const char *const *g_phase_names;
int g_nphase_names;
std::atomic<int> g_nphases{0};
}  // namespace

void phase_names(const char *const *names, int n) {
  g_phase_names = names;
  g_nphase_names = n;
}

void phase_reserve(int n) {
  int have = g_nphases.load(std::memory_order_relaxed);
  while (have < n && !g_nphases.compare_exchange_weak(have, n)) {
  }
}

PhaseSlot *phase_slot(int index) {
  if (index < 0 || index >= kMaxPhaseThreads) {
    fprintf(stderr, "phase_slot: index %d outside 0..%d\n", index, kMaxPhaseThreads - 1);
    abort();
  }
  PhaseSlot *s = &g_phases[index];
  s->tid.store(int(syscall(SYS_gettid)), std::memory_order_relaxed);
  phase_reserve(index + 1);
  return s;
}

int phase_threads() { return g_nphases.load(std::memory_order_acquire); }

bool phase_read(int index, int *tid, const char **call, bool *inside, uint64_t *calls) {
  if (index < 0 || index >= phase_threads()) return false;
  const PhaseSlot &s = g_phases[index];
  *tid = s.tid.load(std::memory_order_relaxed);
  uint64_t w = s.word.load(std::memory_order_relaxed);
  unsigned id = unsigned(w >> 1) & 0x7fffu;
  *calls = w >> 16;
  *inside = w & 1u;
  *call = (*calls && g_phase_names && int(id) < g_nphase_names) ? g_phase_names[id] : nullptr;
  return true;
}

int counters_count() { return g_ncounters.load(std::memory_order_acquire); }
const char *counter_name(int i) { return g_counter_names[i]; }
uint64_t counter_value(int i) { return g_counters[i].v.load(std::memory_order_relaxed); }

void errors_record(int code) {
  if (code == 0) return;
  for (ErrSlot &e : g_errors) {
    int c = e.code.load(std::memory_order_relaxed);
    if (c == 0 && e.code.compare_exchange_strong(c, code)) c = code;  // claimed a free slot
    if (c == code) {
      e.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

void set_error_namer(const char *(*namer)(int)) { g_namer = namer; }

bool stop_with(const char *status, const char *error, const char *call, const char *reason) {
  std::lock_guard<std::mutex> lock(g_stop_mu);
  if (g_stop_status) return false;
  g_stop_status = status;
  g_stop_error = error;
  g_stop_call = call;
  g_stop_reason = reason;
  g_stop_flag.store(1, std::memory_order_release);
  return true;
}

void request_stop() { g_stop_flag.store(1, std::memory_order_release); }

uint64_t elapsed_ns() { return mono_ns() - g_t0_ns; }
double elapsed_s() { return double(elapsed_ns()) * 1e-9; }

std::string json_quote(const char *s) {
  std::string out = "\"";
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += char(c);
    }
  }
  return out + '"';
}

void emit_start(const char *driver, const std::string &config_json) {
  write_line("{\"event\":\"start\",\"driver\":" + json_quote(driver) +
             ",\"pid\":" + std::to_string(getpid()) +
             ",\"config\":" + (config_json.empty() ? "{}" : config_json) + "}\n");
}

void emit_heartbeat() {
  write_line("{\"event\":\"heartbeat\",\"t\":" + fmt_t() + ",\"counters\":" + counters_json() +
             ",\"errors\":" + errors_json() + "}\n");
}

void emit_final(const char *status, const std::string &extra_fields) {
  write_line("{\"event\":\"final\",\"status\":" + json_quote(status) + ",\"t\":" + fmt_t() +
             ",\"counters\":" + counters_json() + ",\"errors\":" + errors_json() +
             (extra_fields.empty() ? "" : "," + extra_fields) + "}\n");
}

int finish(const std::string &observations_json) {
  stop_with("ok");  // no-op if a worker already stopped us
  std::string extra;
  const char *status;
  {
    std::lock_guard<std::mutex> lock(g_stop_mu);
    status = g_stop_status;
    auto add = [&](const char *key, const char *v) {
      if (!v) return;
      if (!extra.empty()) extra += ',';
      extra += json_quote(key) + ':' + json_quote(v);
    };
    add("error", g_stop_error);
    add("call", g_stop_call);
    add("reason", g_stop_reason);
  }
  std::string observations = observations_json;
  // A hang: where each worker is now, as the final record is written (the calls they published;
  // a stuck worker stays put). Not a snapshot at a fault: there was none.
  if (std::string(status) == "hung" && phase_threads()) {
    // Appends only (no operator+ on strings): the crash preload must export no libstdc++
    // template instance (tests/run/test_native.py).
    std::string threads = "\"threads\":[";
    for (int i = 0, n = phase_threads(); i < n; ++i) {
      int tid;
      const char *call;
      bool inside;
      uint64_t calls;
      if (!phase_read(i, &tid, &call, &inside, &calls)) continue;
      if (threads.back() != '[') threads += ',';
      threads += "{\"thread\":";
      threads += std::to_string(i);
      threads += ",\"call\":";
      threads += call ? json_quote(call) : std::string("null");
      threads += ",\"inside\":";
      threads += inside ? "true" : "false";
      threads += ",\"calls\":";
      threads += std::to_string(calls);
      threads += '}';
    }
    threads += ']';
    if (observations.empty() || observations == "{}") {
      observations = "{";
    } else {
      observations.resize(observations.rfind('}'));
      observations += ',';
    }
    observations += threads;
    observations += '}';
  }
  if (!observations.empty())
    extra += (extra.empty() ? "" : ",") + std::string("\"observations\":") + observations;
  emit_final(status, extra);
  std::string st = status;
  if (st == "ok") return 0;
  if (st == "unsupported" || st == "no_driver") return 3;
  if (st == "hung") return 4;
  return 1;
}

void run_until(double duration_s, const Counter *cycles, uint64_t max_cycles, int heartbeat_ms) {
  const double hb = heartbeat_ms > 0 ? heartbeat_ms / 1000.0 : 1.0;
  const double end = duration_s > 0 ? elapsed_s() + duration_s : 1e300;
  double next_hb = elapsed_s() + hb;
  for (;;) {
    if (stop_requested()) return;
    if (max_cycles && cycles && cycles->get() >= max_cycles) return;
    double now = elapsed_s();
    if (now >= end) return;
    if (now >= next_hb) {
      emit_heartbeat();
      next_hb += hb;
      if (next_hb <= now) next_hb = now + hb;  // fell behind (stalled): do not burst
    }
    double step = end - now;
    if (next_hb - now < step) step = next_hb - now;
    if (step > 0.010) step = 0.010;
    if (step < 0.0001) step = 0.0001;
    timespec ts{0, long(step * 1e9)};
    nanosleep(&ts, nullptr);
  }
}

int join_workers(const pthread_t *threads, int n, double deadline_s, int heartbeat_ms) {
  request_stop();
  const double hb = heartbeat_ms > 0 ? heartbeat_ms / 1000.0 : 1.0;
  const double stopped_at = elapsed_s();
  double next_hb = stopped_at + hb;
  std::vector<char> joined(size_t(n > 0 ? n : 0), 0);
  int running = n;
  for (;;) {
    for (int i = 0; i < n; ++i)
      if (!joined[size_t(i)] && pthread_tryjoin_np(threads[i], nullptr) == 0) {
        joined[size_t(i)] = 1;
        --running;
      }
    if (running <= 0) return 0;
    double now = elapsed_s();
    if (deadline_s > 0 && now - stopped_at >= deadline_s) {
      // Lives for the process: finish() reads it after we return.
      static char reason[160];
      snprintf(reason, sizeof reason, "%d of %d worker threads still running %.3g s after the stop",
               running, n, now - stopped_at);
      // "hung" also replaces an "ok" a worker decided (its cycle budget) while another stuck;
      // a cuda_error or unsupported decided first stays: it is the first thing that went wrong.
      std::lock_guard<std::mutex> lock(g_stop_mu);
      if (!g_stop_status || std::string(g_stop_status) == "ok") {
        g_stop_status = "hung";
        g_stop_error = g_stop_call = nullptr;
        g_stop_reason = reason;
        g_stop_flag.store(1, std::memory_order_release);
      }
      return running;
    }
    if (now >= next_hb) {
      emit_heartbeat();
      next_hb += hb;
      if (next_hb <= now) next_hb = now + hb;
    }
    timespec ts{0, 2 * 1000 * 1000};  // 2 ms: a finished worker is noticed at once
    nanosleep(&ts, nullptr);
  }
}
