// Crash handler: on a fatal signal write one line `GPUREPRO_CRASH {json}` to stderr, then die of
// the same signal (SIG_DFL + raise) so the parent still sees the real cause.
// The other threads keep running while the handler works (backtrace, the scan of
// /proc/self/maps: about 0.2 ms on an H200 host, milliseconds with thousands of mappings), so
// every thread's phase and every counter are copied first, on entry, and the record's `threads`
// and `counters` are that copy: the state at the fault. A second read of the phases after the
// slow part goes under `threads_late`, with how long after entry it came.
// Compiled into each driver (see host.cc / testdriver.cc) and into libgpurepro_crash.so
// (see crash_preload.cc).
//
// Everything reached from the handler is async-signal-safe: open/read/close/write/nanosleep/
// sigaction/raise, atomics, and our own formatting into static buffers (no malloc, no stdio).
// backtrace() is the exception POSIX does not bless; it is safe once libgcc's unwinder is loaded,
// which install_crash_handler() forces by calling it once.
#include "crash.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "events.h"

namespace {

// SIGQUIT is the harness asking a trial that stopped making progress where its threads are: the
// same record (the threads copied on entry), then the process dies of it.
const int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT};
const size_t kAltStackBytes = 256 * 1024;  // roomy for large (AVX-512/AMX) signal frames
enum { kMaxFrames = 64, kPathMax = 256 };

std::atomic<int> g_owner_tid{0};  // the thread writing a record; 0 while none

// ---- output buffer and formatting (no snprintf: not async-signal-safe) ----
char g_out[64 * 1024];
size_t g_len;

void put_char(char c) {
  if (g_len < sizeof g_out - 1) g_out[g_len++] = c;
}
void put(const char *s) {
  while (*s) put_char(*s++);
}
void put_u64(uint64_t v) {
  char b[24];
  int n = 0;
  do b[n++] = char('0' + v % 10); while (v /= 10);
  while (n) put_char(b[--n]);
}
void put_i64(int64_t v) {
  if (v < 0) {
    put_char('-');
    put_u64(uint64_t(0) - uint64_t(v));
  } else {
    put_u64(uint64_t(v));
  }
}
void put_hex(uint64_t v) {  // as a JSON string: "0x7f12..."
  char b[20];
  int n = 0;
  do b[n++] = "0123456789abcdef"[v & 15]; while (v >>= 4);
  put("\"0x");
  while (n) put_char(b[--n]);
  put_char('"');
}
void put_json_str(const char *s) {
  put_char('"');
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      put_char('\\');
      put_char(char(c));
    } else if (c < 0x20) {
      put("\\u00");
      put_char("0123456789abcdef"[c >> 4]);
      put_char("0123456789abcdef"[c & 15]);
    } else {
      put_char(char(c));
    }
  }
  put_char('"');
}
void put_seconds(uint64_t ns) {  // 2.310
  put_u64(ns / 1000000000u);
  put_char('.');
  uint64_t ms = ns / 1000000u % 1000u;
  put_char(char('0' + ms / 100));
  put_char(char('0' + ms / 10 % 10));
  put_char(char('0' + ms % 10));
}

// ---- names ----
const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGQUIT: return "SIGQUIT";
    default: return "SIG?";
  }
}

// si_code values <= 0 (and SI_KERNEL) mean the same for every signal; positive ones are
// per-signal. Returns nullptr when unknown.
const char *code_name(int sig, int code) {
  switch (code) {
    case SI_USER: return "SI_USER";
    case SI_KERNEL: return "SI_KERNEL";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TIMER: return "SI_TIMER";
    case SI_MESGQ: return "SI_MESGQ";
    case SI_ASYNCIO: return "SI_ASYNCIO";
    case SI_SIGIO: return "SI_SIGIO";
    case SI_TKILL: return "SI_TKILL";
  }
  static const char *const segv[] = {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR",
                                     "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR",
                                     "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR"};
  static const char *const bus[] = {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR",
                                    "BUS_MCEERR_AO"};
  static const char *const ill[] = {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
                                    "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK",
                                    "ILL_BADIADDR"};
  static const char *const fpe[] = {"FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
                                    "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB",
                                    "FPE_FLTUNK", "FPE_CONDTRAP"};
#define PICK(tab) \
  return code >= 1 && code <= int(sizeof tab / sizeof *tab) ? tab[code - 1] : nullptr
  switch (sig) {
    case SIGSEGV: PICK(segv);
    case SIGBUS: PICK(bus);
    case SIGILL: PICK(ill);
    case SIGFPE: PICK(fpe);
  }
#undef PICK
  return nullptr;
}

// ---- /proc/self/maps ----
struct Where {
  uintptr_t addr;
  bool found;
  uint64_t offset;  // addr - start + file offset of the mapping
  char perms[5];
  char path[kPathMax];  // "" for anonymous mappings
};
Where g_where[2 + kMaxFrames];  // [0] pc, [1] fault address, then frames
char g_maps[16384];

const char *parse_hex(const char *p, const char *end, uint64_t *v) {
  *v = 0;
  for (; p < end; ++p) {
    char c = *p;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) break;
    *v = *v << 4 | uint64_t(d);
  }
  return p;
}

// One line: "start-end perms offset dev inode   path"
void match_line(const char *p, const char *end, int n) {
  uint64_t start, stop, off;
  p = parse_hex(p, end, &start);
  if (p >= end || *p != '-') return;
  p = parse_hex(p + 1, end, &stop);
  if (end - p < 6) return;
  const char *perms = p + 1;
  p = parse_hex(perms + 5, end, &off);
  for (int field = 0; field < 2; ++field) {  // dev, inode
    while (p < end && *p == ' ') ++p;
    while (p < end && *p != ' ') ++p;
  }
  while (p < end && *p == ' ') ++p;
  for (int i = 0; i < n; ++i) {
    Where &w = g_where[i];
    if (w.found || w.addr < start || w.addr >= stop) continue;
    w.found = true;
    w.offset = w.addr - start + off;
    memcpy(w.perms, perms, 4);
    w.perms[4] = 0;
    size_t len = size_t(end - p) < kPathMax - 1 ? size_t(end - p) : kPathMax - 1;
    memcpy(w.path, p, len);
    w.path[len] = 0;
  }
}

// Resolve g_where[0..n) in one pass over /proc/self/maps.
void resolve(int n) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  size_t have = 0;
  bool skipping = false;  // inside the tail of a line longer than the buffer
  for (;;) {
    ssize_t r = read(fd, g_maps + have, sizeof g_maps - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (have && !skipping) match_line(g_maps, g_maps + have, n);
      break;
    }
    have += size_t(r);
    char *line = g_maps, *end = g_maps + have;
    for (char *nl; (nl = static_cast<char *>(memchr(line, '\n', size_t(end - line))));
         line = nl + 1) {
      if (!skipping) match_line(line, nl, n);
      skipping = false;
    }
    have = size_t(end - line);
    if (have == sizeof g_maps) {  // one line fills the buffer: use its head, skip the rest
      match_line(g_maps, end, n);
      skipping = true;
      have = 0;
    } else {
      memmove(g_maps, line, have);
    }
  }
  close(fd);
}

void put_where(const Where &w) {
  if (!w.found) {
    put("null");
    return;
  }
  put("{\"path\":");
  put_json_str(w.path);
  put(",\"offset\":");
  put_hex(w.offset);
  put(",\"perms\":");
  put_json_str(w.perms);
  put_char('}');
}

// ---- the snapshot at the fault ----
struct Phase {
  bool read;  // phase_read accepted the index
  int tid;
  const char *call;
  bool inside;
  uint64_t calls;
};
struct Phases {
  int n;
  Phase at[kMaxPhaseThreads];
};
Phases g_threads_at_fault, g_threads_late;
uint64_t g_counters_at_fault[kMaxCounters];
int g_ncounters_at_fault;

void read_phases(Phases *p) {
  p->n = phase_threads() < kMaxPhaseThreads ? phase_threads() : kMaxPhaseThreads;
  for (int i = 0; i < p->n; ++i) {
    Phase &t = p->at[i];
    t.read = phase_read(i, &t.tid, &t.call, &t.inside, &t.calls);
  }
}

// Relaxed loads into static buffers: no call here may be slow, or the others run on meanwhile.
void snapshot_at_fault() {
  read_phases(&g_threads_at_fault);
  g_ncounters_at_fault = counters_count();
  for (int i = 0; i < g_ncounters_at_fault; ++i) g_counters_at_fault[i] = counter_value(i);
}

void put_phases(const Phases &p, int faulting_tid) {
  put_char('[');
  bool first = true;
  for (int i = 0; i < p.n; ++i) {
    const Phase &t = p.at[i];
    if (!t.read) continue;
    if (!first) put_char(',');
    first = false;
    put("{\"thread\":");
    put_i64(i);
    put(",\"call\":");
    if (t.call) put_json_str(t.call); else put("null");
    put(",\"inside\":");
    put(t.inside ? "true" : "false");
    put(",\"calls\":");
    put_u64(t.calls);
    put(",\"faulting\":");
    put(t.tid == faulting_tid ? "true" : "false");
    put_char('}');
  }
  put_char(']');
}

// The handlers install_crash_handler_last() found in place, indexed like kSignals (zero: SIG_DFL,
// nothing to chain to); chained to after our record is written. install_crash_handler() saves
// none: a native driver run with the crash object preloaded writes one record, its own.
struct sigaction g_prev[sizeof kSignals / sizeof *kSignals];

// After the record: run the handler that was installed before ours, if it is a real one (a
// Python process's faulthandler, which writes Python's frames and raises the signal again:
// blocked while we are in its handler, it stays pending and die() finishes the process).
void chain_previous(int sig, siginfo_t *si, void *ucv) {
  for (size_t i = 0; i < sizeof kSignals / sizeof *kSignals; ++i) {
    if (kSignals[i] != sig) continue;
    const struct sigaction &p = g_prev[i];
    if (p.sa_flags & SA_SIGINFO) {
      if (p.sa_sigaction) p.sa_sigaction(sig, si, ucv);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
      p.sa_handler(sig);
    }
  }
}

void die(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigaction(sig, &sa, nullptr);
  raise(sig);  // blocked while we are in its handler: delivered, with SIG_DFL, when we return
}

void handler(int sig, siginfo_t *si, void *ucv) {
  const uint64_t entry_ns = elapsed_ns();  // clock_gettime: async-signal-safe
  int saved_errno = errno;
  int tid = int(syscall(SYS_gettid));
  int owner = 0;
  if (!g_owner_tid.compare_exchange_strong(owner, tid)) {
    if (owner != tid) {
      // Another thread is writing its record and will kill the process: let it finish (2 s cap).
      for (int i = 0; i < 200; ++i) {
        timespec ts{0, 10000000};
        nanosleep(&ts, nullptr);
      }
    }
    die(sig);  // same thread: we faulted inside the handler
    return;
  }
  snapshot_at_fault();  // first: before backtrace() and the maps scan
  const uint64_t snapshot_ns = elapsed_ns() - entry_ns;

  uintptr_t pc = 0;
#if defined(__x86_64__)
  pc = uintptr_t(static_cast<ucontext_t *>(ucv)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  pc = uintptr_t(static_cast<ucontext_t *>(ucv)->uc_mcontext.pc);
#else
  (void)ucv;
#endif
  // si_addr is meaningful only for kernel-generated faults (si_code > 0); for kill/abort the
  // same bytes hold the sender's pid/uid.
  const bool has_addr = si->si_code > 0 && sig != SIGABRT;

  void *frames[kMaxFrames];
  int nframes = backtrace(frames, kMaxFrames);
  // Drop the handler's own frames and the signal trampoline: start at the faulting pc.
  for (int i = 0; i < nframes; ++i) {
    if (uintptr_t(frames[i]) == pc) {
      memmove(frames, frames + i, sizeof(void *) * size_t(nframes - i));
      nframes -= i;
      break;
    }
  }

  int nwhere = 2 + nframes;
  for (int i = 0; i < nwhere; ++i) g_where[i].found = false;
  g_where[0].addr = pc;
  g_where[1].addr = has_addr ? uintptr_t(si->si_addr) : 0;
  for (int i = 0; i < nframes; ++i) g_where[2 + i].addr = uintptr_t(frames[i]);
  resolve(nwhere);
  if (!has_addr) g_where[1].found = false;

  g_len = 0;
  put("GPUREPRO_CRASH {\"signal\":\"");
  put(signal_name(sig));
  put("\",\"signo\":");
  put_i64(sig);
  put(",\"si_code\":");
  put_i64(si->si_code);
  put(",\"code_name\":");
  const char *cn = code_name(sig, si->si_code);
  if (cn) put_json_str(cn); else put("null");
  if (si->si_code <= 0) {  // sent by a process (kill, raise, abort): say which
    put(",\"sender_pid\":");
    put_i64(si->si_pid);
  }
  put(",\"addr\":");
  if (has_addr) put_hex(uintptr_t(si->si_addr)); else put("null");
  put(",\"pc\":");
  put_hex(pc);
  put(",\"pc_map\":");
  put_where(g_where[0]);
  put(",\"addr_map\":");
  put_where(g_where[1]);
  put(",\"frames\":[");
  for (int i = 0; i < nframes; ++i) {
    const Where &w = g_where[2 + i];
    if (i) put_char(',');
    put("{\"pc\":");
    put_hex(w.addr);
    put(",\"path\":");
    if (w.found) put_json_str(w.path); else put("null");
    put(",\"offset\":");
    if (w.found) put_hex(w.offset); else put("null");
    put_char('}');
  }
  put("],\"t\":");
  put_seconds(entry_ns);
  put(",\"tid\":");
  put_i64(tid);
  put(",\"snapshot_ns\":");
  put_u64(snapshot_ns);
  put(",\"counters\":{");
  for (int i = 0; i < g_ncounters_at_fault; ++i) {
    if (i) put_char(',');
    put_json_str(counter_name(i));
    put_char(':');
    put_u64(g_counters_at_fault[i]);
  }
  put_char('}');
  // Every worker's phase (events.h): which call it was in, or last left, at the fault; then the
  // same read again now, after the slow part, to show how far the others ran on meanwhile.
  if (g_threads_at_fault.n) {
    put(",\"threads\":");
    put_phases(g_threads_at_fault, tid);
    read_phases(&g_threads_late);
    const uint64_t late_read_ns = elapsed_ns() - entry_ns;
    put(",\"threads_late\":");
    put_phases(g_threads_late, tid);
    put(",\"late_read_ns\":");
    put_u64(late_read_ns);
  }
  put_char('}');
  g_out[g_len++] = '\n';  // put_char keeps one byte free for this

  for (size_t off = 0; off < g_len;) {
    ssize_t w = write(2, g_out + off, g_len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += size_t(w);
  }
  errno = saved_errno;
  chain_previous(sig, si, ucv);
  die(sig);
}

}  // namespace

void install_thread_altstack() {
  stack_t cur;
  // One of ours, or someone's at least as large, is kept; a smaller one (Python's faulthandler
  // installs ~16 KiB) is replaced: the record and a chained handler both run on it.
  if (sigaltstack(nullptr, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) &&
      cur.ss_size >= kAltStackBytes)
    return;
  void *mem = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) return;  // handler then runs on the thread's own stack
  stack_t ss;
  ss.ss_sp = mem;
  ss.ss_size = kAltStackBytes;
  ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
}

void install_crash_handler() {
  static bool installed;
  if (installed) return;
  installed = true;
  install_thread_altstack();
  void *prime[2];
  backtrace(prime, 2);  // loads libgcc_s now, so the handler's call does not dlopen/malloc
  // Touch the snapshot's buffers now: a first-touch page fault in the handler would delay the
  // snapshot while the other threads run on.
  memset(&g_threads_at_fault, 0, sizeof g_threads_at_fault);
  memset(g_counters_at_fault, 0, sizeof g_counters_at_fault);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
}

void install_crash_handler_last() {
  install_crash_handler();
  install_thread_altstack();
  struct sigaction sa, cur;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof kSignals / sizeof *kSignals; ++i) {
    if (sigaction(kSignals[i], nullptr, &cur) != 0) continue;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == handler) continue;  // ours already
    g_prev[i] = cur;
    sigaction(kSignals[i], &sa, nullptr);
  }
}
