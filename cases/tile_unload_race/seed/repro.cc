#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;
extern "C" {
int cuInit(unsigned);
int cuDeviceGet(int *, int);
int cuCtxCreate_v2(CUcontext *, unsigned, int);
int cuCtxSetCurrent(CUcontext);
int cuMemAlloc_v2(CUdeviceptr *, size_t);
int cuModuleLoadData(CUmodule *, const void *);
int cuModuleGetFunction(CUfunction *, CUmodule, const char *);
int cuModuleUnload(CUmodule);
int cuCtxSynchronize(void);
int cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, void *, void **, void **);
int cudaDeviceSynchronize(void);
}

static const int M = 128;
static void *g_cubin;
static CUcontext g_ctx;
static CUdeviceptr g_buf[3];
static int g_dim[4] = {M, M, M, 1};  // shape0, shape1, stride0, stride1
static void *g_args[15];             // per array: pointer, then those four
static unsigned long long g_launch, g_load, g_unload;
#define ADD(v) __atomic_add_fetch(&(v), 1, __ATOMIC_RELAXED)

static void *worker(void *) {
  cuCtxSetCurrent(g_ctx);
  for (int n = 0;; ++n) {
    CUmodule m;
    if (cuModuleLoadData(&m, g_cubin)) continue;
    ADD(g_load);
    CUfunction f;
    if (cuModuleGetFunction(&f, m, "repro_kernel")) { 
	cuModuleUnload(m);
	continue;
    }
    if (!cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, g_args, 0)) ADD(g_launch);
    
    cuCtxSynchronize();
    
    if ((n & 3) && !cuModuleUnload(m)) ADD(g_unload);
  }
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "kernel.cubin";
  int secs = argc > 2 ? atoi(argv[2]) : 60;
  setvbuf(stdout, 0, _IOLBF, 0);

  FILE *fp = fopen(path, "rb");
  if (!fp) { perror(path); return 2; }
  fseek(fp, 0, SEEK_END);
  long sz = ftell(fp);
  rewind(fp);
  g_cubin = malloc(sz);
  if (fread(g_cubin, 1, sz, fp) != (size_t)sz) { perror("read"); return 2; }
  fclose(fp);

  int dev;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate_v2(&g_ctx, 0, dev)) {
    fprintf(stderr, "CUDA init failed\n");
    return 2;
  }
  for (int i = 0, a = 0; i < 3; ++i) {    // kernel ABI: per array a pointer,
    cuMemAlloc_v2(&g_buf[i], M * M * 4);  // then shape0, shape1, stride0,
    g_args[a++] = &g_buf[i];              // stride1, as int32
    for (int q = 0; q < 4; ++q) g_args[a++] = &g_dim[q];
  }
  printf("%s (%ld bytes), 2 threads, nothing preloaded\n", path, sz);

  pthread_t t[2];
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], 0, worker, 0);

  for (int i = 0; i < secs; ++i) {
    sleep(1);
    printf("  launches=%llu loads=%llu unloads=%llu\n",
           __atomic_load_n(&g_launch, __ATOMIC_RELAXED),
           __atomic_load_n(&g_load, __ATOMIC_RELAXED),
           __atomic_load_n(&g_unload, __ATOMIC_RELAXED));
  }
  printf("SURVIVED %ds\n", secs);
  _exit(0);
}
