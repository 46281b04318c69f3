// JSON-lines events on stdout (start, heartbeat, final) and the state they report: a fixed table
// of named counters, a table of CUDA error counts, and the stop flag. The protocol is in
// native/README.md. Everything a hot loop touches here is a relaxed atomic: no locks, no
// syscalls, no allocation.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>

enum { kMaxCounters = 16, kMaxErrorCodes = 16 };

// A handle to one counter. inc() is the only thing a hot loop should call; it returns the new
// value (fetch_add gives it for free), so a loop can check a cycle budget at no extra cost.
struct Counter {
  std::atomic<uint64_t> *v;
  uint64_t inc() const { return v->fetch_add(1, std::memory_order_relaxed) + 1; }
  uint64_t get() const { return v->load(std::memory_order_relaxed); }
};

// Register (or look up) a counter before starting threads. `name` must outlive the process
// (a string literal); counters appear in events in registration order. Aborts past kMaxCounters.
Counter counter(const char *name);

// For the crash handler: async-signal-safe reads of the table.
int counters_count();
const char *counter_name(int i);
uint64_t counter_value(int i);

// Where each worker thread is: the API call it is in (or last left) and how many calls it has
// entered, published with relaxed stores so the crash handler can say what every thread was
// doing at the fault. One 64-bit word per thread, written only by its owner:
//   bits 63..16: calls entered, bits 15..1: call id (index into the names), bit 0: inside.
// Cost per call: two plain stores to a line only this thread writes (no fetch_add, no fence).
enum { kMaxPhaseThreads = 64 };
struct alignas(64) PhaseSlot {
  std::atomic<uint64_t> word{0};
  uint64_t mine = 0;  // the owner's copy of word (only the owner touches it)
  std::atomic<int> tid{0};
};
// Register the call names once, before any thread publishes (ids index `names`; id 0 is the
// state before the first call). `names` must outlive the process (literals).
void phase_names(const char *const *names, int n);
// Announce n slots before starting the threads, so a crash record lists every one of them,
// a thread that has not reached its first call as call null, 0 calls.
void phase_reserve(int n);
// The calling thread's slot for worker `index` (0 <= index < kMaxPhaseThreads; records its tid).
PhaseSlot *phase_slot(int index);
inline void phase_enter(PhaseSlot *s, unsigned call) {
  s->mine = (((s->mine >> 16) + 1) << 16) | (uint64_t(call) << 1) | 1u;
  s->word.store(s->mine, std::memory_order_relaxed);
}
inline void phase_exit(PhaseSlot *s) {
  s->mine &= ~uint64_t(1);
  s->word.store(s->mine, std::memory_order_relaxed);
}
// For the crash handler (async-signal-safe): the highest registered index + 1, and one slot.
int phase_threads();
// False past phase_threads(). `call` is null before a thread's first call; `tid` 0 before the
// thread took its slot.
bool phase_read(int index, int *tid, const char **call, bool *inside, uint64_t *calls);

// Count one failed call returning `code` (lock-free; not counted once kMaxErrorCodes distinct
// codes are taken). Names come from the namer (default: cuda_types.h's table, else
// "CUDA_ERROR_<n>"); host drivers install cu_error_name.
void errors_record(int code);
void set_error_namer(const char *(*namer)(int code));

// Ask every loop to stop. The first call wins and decides the `final` record that finish()
// writes: status "ok" (budget used up), "cuda_error" (error + call), "unsupported" (reason),
// "hung" (join_workers' deadline passed)... Pointers must stay valid (literals or cu_error_name
// results). Returns true if this call won.
bool stop_with(const char *status, const char *error = nullptr, const char *call = nullptr,
               const char *reason = nullptr);

// Ask every loop to stop without deciding the final status: a worker that fails while finishing
// its last iteration still wins with its cuda_error; finish() says "ok" if nobody decided.
void request_stop();

extern std::atomic<int> g_stop_flag;
// One relaxed load: cheap enough for every iteration of a hot loop.
inline bool stop_requested() { return g_stop_flag.load(std::memory_order_relaxed) != 0; }

// Seconds / nanoseconds since process start (CLOCK_MONOTONIC; the ns form is signal-safe).
double elapsed_s();
uint64_t elapsed_ns();

// JSON string literal for s, quotes included.
std::string json_quote(const char *s);

// Each writes one line with a single write(2) call (retried only on a partial write).
void emit_start(const char *driver, const std::string &config_json);  // config: a JSON object
void emit_heartbeat();
// extra_fields: members to append, e.g. "\"error\":\"X\",\"call\":\"Y\"" (may be empty).
void emit_final(const char *status, const std::string &extra_fields = "");

// Emit the `final` record for whichever stop_with() won ("ok" if none did), with an optional
// "observations" object (a JSON object text, or empty). Returns the exit status per the
// contract: 0 ok, 1 cuda_error, 3 unsupported / no_driver, 4 hung. Call it only once every
// worker has returned (join_workers), or a kernel that never returns would end as "ok".
int finish(const std::string &observations_json = "");

// Main-thread loop: heartbeat every heartbeat_ms until duration_s has passed (<= 0: no time
// limit), `cycles` reaches max_cycles (0 or nullptr: no cycle budget), or a stop was requested.
// Sleeps in steps of at most 10 ms, so a worker's stop is noticed quickly.
void run_until(double duration_s, const Counter *cycles, uint64_t max_cycles, int heartbeat_ms);

// Main thread, after run_until() and before finish(): request_stop(), then wait for each of the
// n threads to return, heartbeating every heartbeat_ms meanwhile (heartbeats keep coming while a
// worker is stuck, with its counters frozen). A kernel that never returns keeps its worker in
// cuCtxSynchronize (or wherever it waits), so the final record is not written:
//   deadline_s <= 0: wait for ever; the harness kills the trial at its wall-clock limit -> `hung`;
//   deadline_s > 0:  once deadline_s seconds have passed since the stop, the final status
//                    becomes "hung" (reason "N of M worker threads still running D s after the
//                    stop"; it replaces an "ok" a worker decided, never a cuda_error decided
//                    first) and it returns; finish() writes it (exit status 4) -> `hung`.
// Returns how many threads were still running (0: all joined; they are then joined for good).
// Only the main thread's wait is added: the workers' loops are untouched.
int join_workers(const pthread_t *threads, int n, double deadline_s, int heartbeat_ms);
