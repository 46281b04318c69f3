/* A fake libcuda.so.1 for testing host drivers without a GPU (tests/run/test_native.py).
 *
 *   cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o DIR/libcuda.so.1 tests/fake_libcuda.c
 *   LD_LIBRARY_PATH=DIR host --cubin any.file ...
 *
 * Every call succeeds and hands out dummy handles, except as the environment says:
 *   FAKE_CUDA_FAIL=NAME:CODE:AFTER  the call NAME returns CODE once it has succeeded AFTER times
 *   FAKE_CUDA_CRASH=NAME:AFTER      the call NAME writes through a bad pointer (SIGSEGV inside
 *                                    "libcuda", as in the tile unload race)
 *   FAKE_CUDA_BLOCK=NAME:AFTER      the call NAME after AFTER returns never returns; later calls
 *                                    (other threads) do (a kernel that never ends, seen from
 *                                    cuCtxSynchronize)
 *   FAKE_CUDA_NO_GPA=1              cuGetProcAddress_v2 finds nothing (tests the dlsym fallback)
 *   FAKE_CUDA_PARAMS=N              cuLaunchKernel wants N kernel parameters (default 15, the
 *                                    tile kernel's ABI): each of kernelParams[0..N-1] non-null
 *   FAKE_CUDA_EVENT_MS=X            cuEventElapsedTime says X ms between two events, plus 0.001
 *                                    ms for every launch recorded (default 0.5): a timed driver's
 *                                    values come from the events, never from a clock here
 * cuGetProcAddress_v2 hands out the variant of a name that the requested version selects, as a
 * real driver does (asking "cuCtxCreate" at 12000 yields the _v3 ABI, which fails here with
 * CUDA_ERROR_INVALID_DEVICE like on driver 580), and counts its successful lookups;
 * cuDriverGetVersion reports that count so a test can see which path resolved the entry points.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int gpa_hits;

struct rule { char name[64]; int code; long after; long calls; int crash; };
static struct rule fail_rule, crash_rule, block_rule;
static int rules_read;
static int launch_params = 15; /* the tile kernel's: 3 arrays, each a pointer and 4 ints */

static void read_rules(void) {
  if (__atomic_exchange_n(&rules_read, 1, __ATOMIC_ACQ_REL)) return;
  const char *f = getenv("FAKE_CUDA_FAIL"), *c = getenv("FAKE_CUDA_CRASH");
  const char *b = getenv("FAKE_CUDA_BLOCK");
  if (f) sscanf(f, "%63[^:]:%d:%ld", fail_rule.name, &fail_rule.code, &fail_rule.after);
  if (c && sscanf(c, "%63[^:]:%ld", crash_rule.name, &crash_rule.after) == 2) crash_rule.crash = 1;
  if (b && sscanf(b, "%63[^:]:%ld", block_rule.name, &block_rule.after) != 2) block_rule.name[0] = 0;
  const char *n = getenv("FAKE_CUDA_PARAMS");
  if (n && atoi(n) > 0) launch_params = atoi(n);
}

/* Called at the top of every entry point: returns the injected error, or 0. */
static int hook(const char *name) {
  if (fail_rule.name[0] && !strcmp(name, fail_rule.name) &&
      __atomic_fetch_add(&fail_rule.calls, 1, __ATOMIC_RELAXED) >= fail_rule.after)
    return fail_rule.code;
  if (crash_rule.crash && !strcmp(name, crash_rule.name) &&
      __atomic_fetch_add(&crash_rule.calls, 1, __ATOMIC_RELAXED) >= crash_rule.after) {
    static volatile unsigned long where = 0x18; /* volatile: not provably bad at compile time */
    *(volatile int *)where = 1;
  }
  if (block_rule.name[0] && !strcmp(name, block_rule.name) &&
      __atomic_fetch_add(&block_rule.calls, 1, __ATOMIC_RELAXED) == block_rule.after)
    for (;;) pause(); /* the kernel never finishes */
  return 0;
}

#define HANDLE ((void *)0x1000)
int cuInit(unsigned f) { (void)f; read_rules(); return hook("cuInit"); }
int cuDriverGetVersion(int *v) { *v = gpa_hits; return hook("cuDriverGetVersion"); }
int cuGetErrorName(int e, const char **s) {
  switch (e) {
    case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
    case 209: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return 0;
    case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
    case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
  }
  *s = 0;
  return 1;
}
int cuDeviceGetCount(int *n) { *n = 1; return hook("cuDeviceGetCount"); }
int cuDeviceGet(int *d, int o) { *d = o; return hook("cuDeviceGet"); }
/* Compute capability 9.0 (75, 76), 4 multiprocessors (16), nominal clocks in kHz (13, 36). */
int cuDeviceGetAttribute(int *v, int a, int d) {
  (void)d;
  *v = a == 75 ? 9 : a == 16 ? 4 : a == 13 ? 1980000 : a == 36 ? 2619000 : 0;
  return 0;
}
int cuDeviceGetPCIBusId(char *b, int len, int d) { (void)d; snprintf(b, len, "0000:00:01.0"); return hook("cuDeviceGetPCIBusId"); }
int cuDeviceGetName(char *n, int len, int d) { (void)d; snprintf(n, len, "Fake GPU"); return 0; }
static __thread void *current_ctx; /* the calling thread's current context */
int cuCtxCreate_v2(void **c, unsigned f, int d) { (void)f; (void)d; *c = current_ctx = HANDLE; return hook("cuCtxCreate"); }
int cuCtxSetCurrent(void *c) { current_ctx = c; return hook("cuCtxSetCurrent"); }
int cuCtxGetCurrent(void **c) { *c = current_ctx; return hook("cuCtxGetCurrent"); }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = HANDLE; return hook("cuDevicePrimaryCtxRetain"); }
/* As CUDA 13.0 declares them: no context current is CUDA_ERROR_INVALID_CONTEXT (201); the _v2
 * form takes the context to ask about (NULL: the current one) and, like the real driver, reads
 * through whatever non-NULL handle it is given (0x10: SIGSEGV inside "libcuda"). */
int cuCtxGetDevice(int *d) {
  if (!current_ctx) return 201;
  *d = 0;
  return hook("cuCtxGetDevice");
}
int cuCtxGetDevice_v2(int *d, void *ctx) {
  if (!ctx) return cuCtxGetDevice(d);
  if (ctx != HANDLE) *d = *(volatile int *)ctx;
  *d = 0;
  return hook("cuCtxGetDevice_v2");
}
int cuCtxDestroy_v2(void *c) { if (c == current_ctx) current_ctx = 0; return hook("cuCtxDestroy"); }
int cuCtxSynchronize(void) { return hook("cuCtxSynchronize"); }
int cuMemAlloc_v2(unsigned long long *p, size_t n) { (void)n; *p = 0x100000; return hook("cuMemAlloc"); }
int cuMemFree_v2(unsigned long long p) { (void)p; return hook("cuMemFree"); }
int cuMemsetD8_v2(unsigned long long d, unsigned char v, size_t n) { (void)d; (void)v; (void)n; return hook("cuMemsetD8"); }
int cuMemsetD16_v2(unsigned long long d, unsigned short v, size_t n) { (void)d; (void)v; (void)n; return hook("cuMemsetD16"); }
int cuMemsetD32_v2(unsigned long long d, unsigned v, size_t n) { (void)d; (void)v; (void)n; return hook("cuMemsetD32"); }
/* Host copies move real bytes through a small fake device memory, so a test can read back. */
static unsigned char fake_mem[1 << 20]; /* a megabyte: a scaffold's buffers fit */
int cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
  if (n > sizeof fake_mem) return 1;
  (void)d; memcpy(fake_mem, s, n); return hook("cuMemcpyHtoD");
}
int cuMemcpyDtoH_v2(void *h, unsigned long long s, size_t n) {
  if (n > sizeof fake_mem) return 1;
  (void)s; memcpy(h, fake_mem, n); return hook("cuMemcpyDtoH");
}
int cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) { (void)d; (void)s; (void)n; return hook("cuMemcpyDtoD"); }
int cuModuleGetGlobal_v2(unsigned long long *p, size_t *b, void *m, const char *n) {
  (void)m; (void)n; *p = 0x200000; if (b) *b = 4; return hook("cuModuleGetGlobal");
}
int cuStreamCreate(void **s, unsigned f) { (void)f; *s = HANDLE; return hook("cuStreamCreate"); }
int cuStreamSynchronize(void *s) { (void)s; return hook("cuStreamSynchronize"); }
int cuStreamDestroy_v2(void *s) { (void)s; return hook("cuStreamDestroy"); }
/* Not in native/'s table: what a case adds from its own folder (tests/run/test_native.py). */
int cuEventCreate(void **e, unsigned f) { (void)f; *e = (void *)0x2000; return hook("cuEventCreate"); }
/* Events: the launches between the last two records set the elapsed time (FAKE_CUDA_EVENT_MS). */
static long launches_seen, launches_at_record[2];
static int records;
int cuEventRecord(void *e, void *s) { (void)e; (void)s; launches_at_record[records++ % 2] = launches_seen; return hook("cuEventRecord"); }
int cuEventSynchronize(void *e) { (void)e; return hook("cuEventSynchronize"); }
int cuEventDestroy_v2(void *e) { (void)e; return hook("cuEventDestroy"); }
int cuEventElapsedTime(float *ms, void *a, void *b) {
  (void)a; (void)b;
  const char *x = getenv("FAKE_CUDA_EVENT_MS");
  long between = launches_at_record[(records + 1) % 2] - launches_at_record[records % 2];
  *ms = (float)((x ? atof(x) : 0.5) + 0.001 * (between < 0 ? -between : between));
  return hook("cuEventElapsedTime");
}
int cuModuleLoadData(void **m, const void *img) { (void)img; *m = HANDLE; return hook("cuModuleLoadData"); }
int cuModuleGetFunction(void **f, void *m, const char *n) { (void)m; (void)n; *f = HANDLE; return hook("cuModuleGetFunction"); }
int cuModuleUnload(void *m) { (void)m; return hook("cuModuleUnload"); }
int cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                   unsigned g, unsigned s, void *st, void **p, void **x) {
  (void)f; (void)a; (void)b; (void)c; (void)d; (void)e; (void)g; (void)s; (void)st; (void)x;
  if (!p) return 1;
  for (int i = 0; i < launch_params; ++i)
    if (!p[i]) return 1; /* fewer parameters than the kernel takes */
  __atomic_fetch_add(&launches_seen, 1, __ATOMIC_RELAXED);
  return hook("cuLaunchKernel");
}
int cuLibraryLoadData(void **l, const void *c, void *a, void **b, unsigned n, void *o, void **v,
                      unsigned m) {
  (void)c; (void)a; (void)b; (void)n; (void)o; (void)v; (void)m;
  *l = HANDLE;
  return hook("cuLibraryLoadData");
}
int cuLibraryGetKernel(void **k, void *l, const char *n) { (void)l; (void)n; *k = HANDLE; return hook("cuLibraryGetKernel"); }
int cuLibraryUnload(void *l) { (void)l; return hook("cuLibraryUnload"); }
int cuKernelGetAttribute(int *v, int a, void *k, int d) { (void)a; (void)k; (void)d; *v = 1024; return hook("cuKernelGetAttribute"); }
int cuDevicePrimaryCtxReset_v2(int d) { (void)d; current_ctx = 0; return hook("cuDevicePrimaryCtxReset"); }

/* Variants a real driver hands out for a base name at newer versions; with our declared ABIs
 * they misbehave the way the real ones did (driver 580: cuCtxCreate at 12000 is _v3). */
static int wrong_abi_ctx_create(void) { return 101; /* CUDA_ERROR_INVALID_DEVICE */ }
static int wrong_abi(void) { return 1; /* CUDA_ERROR_INVALID_VALUE */ }

/* Newest variant introduced at or before `version`, as cudaTypedefs.h lists them. */
static void *variant(const char *sym, int version) {
  static const struct { const char *base; int since; void *fn; } table[] = {
    {"cuCtxCreate", 2000, (void *)wrong_abi}, {"cuCtxCreate", 3020, (void *)cuCtxCreate_v2},
    {"cuCtxCreate", 11040, (void *)wrong_abi_ctx_create},
    {"cuCtxCreate", 12050, (void *)wrong_abi_ctx_create},
    {"cuMemAlloc", 2000, (void *)wrong_abi}, {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2},
    {"cuMemFree", 2000, (void *)wrong_abi}, {"cuMemFree", 3020, (void *)cuMemFree_v2},
    {"cuMemsetD8", 2000, (void *)wrong_abi}, {"cuMemsetD8", 3020, (void *)cuMemsetD8_v2},
    {"cuMemsetD16", 2000, (void *)wrong_abi}, {"cuMemsetD16", 3020, (void *)cuMemsetD16_v2},
    {"cuMemsetD32", 2000, (void *)wrong_abi}, {"cuMemsetD32", 3020, (void *)cuMemsetD32_v2},
    {"cuEventDestroy", 2000, (void *)wrong_abi}, {"cuEventDestroy", 4000, (void *)cuEventDestroy_v2},
    {"cuMemcpyHtoD", 2000, (void *)wrong_abi}, {"cuMemcpyHtoD", 3020, (void *)cuMemcpyHtoD_v2},
    {"cuMemcpyDtoH", 2000, (void *)wrong_abi}, {"cuMemcpyDtoH", 3020, (void *)cuMemcpyDtoH_v2},
    {"cuMemcpyDtoD", 2000, (void *)wrong_abi}, {"cuMemcpyDtoD", 3020, (void *)cuMemcpyDtoD_v2},
    {"cuModuleGetGlobal", 2000, (void *)wrong_abi},
    {"cuModuleGetGlobal", 3020, (void *)cuModuleGetGlobal_v2},
    {"cuStreamDestroy", 2000, (void *)wrong_abi}, {"cuStreamDestroy", 4000, (void *)cuStreamDestroy_v2},
    {"cuCtxDestroy", 2000, (void *)wrong_abi}, {"cuCtxDestroy", 4000, (void *)cuCtxDestroy_v2},
    {"cuCtxSynchronize", 2000, (void *)cuCtxSynchronize},
    {"cuCtxSynchronize", 13000, (void *)wrong_abi},
  };
  void *best = 0;
  int found = 0;
  for (unsigned i = 0; i < sizeof table / sizeof *table; ++i)
    if (!strcmp(sym, table[i].base)) {
      found = 1;
      if (table[i].since <= version) best = table[i].fn;
    }
  return found ? best : dlsym(RTLD_DEFAULT, sym);
}

int cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags,
                        int *status) {
  (void)flags;
  *pfn = getenv("FAKE_CUDA_NO_GPA") ? 0 : variant(sym, version);
  if (status) *status = *pfn ? 0 : 1;
  if (!*pfn) return 500; /* CUDA_ERROR_NOT_FOUND */
  __atomic_fetch_add(&gpa_hits, 1, __ATOMIC_RELAXED);
  return 0;
}
