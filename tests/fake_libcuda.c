/* A fake libcuda.so.1 for testing host drivers without a GPU (tests/test_native.py).
 *
 *   cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o DIR/libcuda.so.1 tests/fake_libcuda.c
 *   LD_LIBRARY_PATH=DIR host --cubin any.file ...
 *
 * Every call succeeds and hands out dummy handles, except as the environment says:
 *   FAKE_CUDA_FAIL=NAME:CODE:AFTER  the call NAME returns CODE once it has succeeded AFTER times
 *   FAKE_CUDA_CRASH=NAME:AFTER      the call NAME writes through a bad pointer (SIGSEGV inside
 *                                    "libcuda", as in the tile unload race)
 *   FAKE_CUDA_NO_GPA=1              cuGetProcAddress_v2 finds nothing (tests the dlsym fallback)
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
static struct rule fail_rule, crash_rule;
static int rules_read;

static void read_rules(void) {
  if (__atomic_exchange_n(&rules_read, 1, __ATOMIC_ACQ_REL)) return;
  const char *f = getenv("FAKE_CUDA_FAIL"), *c = getenv("FAKE_CUDA_CRASH");
  if (f) sscanf(f, "%63[^:]:%d:%ld", fail_rule.name, &fail_rule.code, &fail_rule.after);
  if (c && sscanf(c, "%63[^:]:%ld", crash_rule.name, &crash_rule.after) == 2) crash_rule.crash = 1;
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
  return 0;
}

#define HANDLE ((void *)0x1000)
int cuInit(unsigned f) { (void)f; read_rules(); return hook("cuInit"); }
int cuDriverGetVersion(int *v) { *v = gpa_hits; return hook("cuDriverGetVersion"); }
int cuGetErrorName(int e, const char **s) {
  switch (e) {
    case 209: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return 0;
    case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
    case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
  }
  *s = 0;
  return 1;
}
int cuDeviceGet(int *d, int o) { *d = o; return hook("cuDeviceGet"); }
int cuDeviceGetAttribute(int *v, int a, int d) { (void)d; *v = a == 75 ? 9 : 0; return 0; }
int cuDeviceGetName(char *n, int len, int d) { (void)d; snprintf(n, len, "Fake GPU"); return 0; }
int cuCtxCreate_v2(void **c, unsigned f, int d) { (void)f; (void)d; *c = HANDLE; return hook("cuCtxCreate"); }
int cuCtxSetCurrent(void *c) { (void)c; return hook("cuCtxSetCurrent"); }
int cuCtxDestroy_v2(void *c) { (void)c; return 0; }
int cuCtxSynchronize(void) { return hook("cuCtxSynchronize"); }
int cuMemAlloc_v2(unsigned long long *p, size_t n) { (void)n; *p = 0x100000; return hook("cuMemAlloc"); }
int cuModuleLoadData(void **m, const void *img) { (void)img; *m = HANDLE; return hook("cuModuleLoadData"); }
int cuModuleGetFunction(void **f, void *m, const char *n) { (void)m; (void)n; *f = HANDLE; return hook("cuModuleGetFunction"); }
int cuModuleUnload(void *m) { (void)m; return hook("cuModuleUnload"); }
int cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                   unsigned g, unsigned s, void *st, void **p, void **x) {
  (void)f; (void)a; (void)b; (void)c; (void)d; (void)e; (void)g; (void)s; (void)st; (void)x;
  if (!p || !p[0] || !p[14]) return 1; /* 15 parameters expected */
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
