// Instrumented variant of seed/repro.cu (the reporter's file, which stays untouched): the same
// kernel (2 CTAs x 128 threads; warp 0 allocs, relinquishes, deallocs; `delay_cta` sleeps `spin`
// x 1 us first; `mode` places a barrier.cluster), with only progress markers of warp 0 per stage
// (native/stage_markers.cuh), the TMEM address each CTA saw and JSON-lines output added.
// Compile-time variants, one build each (README.md, "Arms"):
//   -DNO_RELINQUISH / -DNO_DEALLOC   skip that instruction (its marker is still written)
//   -DLINGER_AFTER_DEALLOC   after dealloc every thread sleeps (2*spin + 1000) x 1 us: the dealloc
//                            is as early as the baseline's, only the CTA's exit is late, so the
//                            CTA that deallocated first is still resident (spin + 1000) x 1 us
//                            after the peer's alloc is issued (claims linger-lower, linger-fails).
//   -DSELFTEST_NO_TCGEN05    no tcgen05 instruction (alloc writes a dummy address): builds for any
//                            sm_90+ target to test markers and output there; never an arm.
// usage: repro_instrumented DELAY_CTA SPIN MODE (as the seed); exit: 0 ok, 1 cuda_error, 3 not run
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <unistd.h>
#include <cuda_runtime.h>
#include "cluster.cuh"
#include "cudart_events.cuh"
#include "stage_markers.cuh"

enum Stage {
  ST_ENTERED = 0, ST_DELAY_DONE, ST_BEFORE_ALLOC, ST_ALLOC_RETURNED,
  ST_RELINQUISH, ST_DEALLOC, ST_END, N_STAGES
};
static const char* const kStageNames[N_STAGES] = {
  "entered", "delay_done", "before_alloc", "alloc_returned", "relinquish", "dealloc", "end"};

struct Markers {
  StageMarkers<2, N_STAGES> stages;   // first: mark(&m->stages, ...) addresses m itself
  uint32_t tmem[2];                   // TMEM address each CTA read after alloc
  uint32_t tmem_seen[2];
};

#ifndef NO_RELINQUISH
#define NO_RELINQUISH 0
#endif
#ifndef NO_DEALLOC
#define NO_DEALLOC 0
#endif
#ifndef LINGER_AFTER_DEALLOC
#define LINGER_AFTER_DEALLOC 0
#endif
#if defined(SELFTEST_NO_TCGEN05)
#define TCGEN05_ALLOC(dst) (*(volatile uint32_t*)&tmem_addr = 0x5e1f)
#define TCGEN05_RELINQUISH() ((void)0)
#define TCGEN05_DEALLOC(a) ((void)(a))
#else
#define TCGEN05_ALLOC(dst) \
  asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" \
               :: "r"(dst), "r"(512) : "memory")
#define TCGEN05_RELINQUISH() \
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory")
#define TCGEN05_DEALLOC(a) \
  asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" \
               :: "r"(a), "r"(512) : "memory")
#endif

extern "C" __global__ void __cluster_dims__(2, 1, 1)
repro(uint32_t* out, uint32_t delay_cta, uint32_t spin, uint32_t mode, Markers* m) {
  __shared__ uint32_t tmem_addr;
  uint32_t rank = ctarank();
  uint32_t warp = threadIdx.x >> 5;
  mark(&m->stages, rank, ST_ENTERED);
  if (threadIdx.x == 0) tmem_addr = 0;
  __syncthreads();

  if (rank == delay_cta) { for (uint32_t i = 0; i < spin; i++) __nanosleep(1000); }
  mark(&m->stages, rank, ST_DELAY_DONE);

  if (mode == 1) cluster_sync();

  if (warp == 0) {
    mark(&m->stages, rank, ST_BEFORE_ALLOC);
    __syncwarp();  // reconverge after the lane-0 store: alloc is .sync.aligned
    uint32_t dst = smem_u32(&tmem_addr);
    TCGEN05_ALLOC(dst);
    mark(&m->stages, rank, ST_ALLOC_RETURNED);
    __syncwarp();
  }
  __syncthreads();

  if (mode == 2) cluster_sync();

  if (warp == 0) {
#if !NO_RELINQUISH
    TCGEN05_RELINQUISH();
#endif
    mark(&m->stages, rank, ST_RELINQUISH);
    __syncwarp();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    out[rank] = tmem_addr;
    if (rank < 2) {
      *(volatile uint32_t*)&m->tmem[rank] = tmem_addr;
      *(volatile uint32_t*)&m->tmem_seen[rank] = 1;
      __threadfence_system();
    }
  }
  __syncthreads();

  if (mode == 6) cluster_sync();

  if (warp == 0) {
#if !NO_DEALLOC
    TCGEN05_DEALLOC(tmem_addr);
#endif
    mark(&m->stages, rank, ST_DEALLOC);
    __syncwarp();
  }
#if LINGER_AFTER_DEALLOC
  for (uint32_t i = 0; i < 2 * spin + 1000; i++) __nanosleep(1000);
#endif
  if (warp == 0) mark(&m->stages, rank, ST_END);
}

// ---------------------------------------------------------------- host side: JSON lines

static const char* variant_name() {
#if defined(SELFTEST_NO_TCGEN05)
  return "selftest_no_tcgen05";
#endif
  if (NO_RELINQUISH) return "no_relinquish";
  if (NO_DEALLOC) return "no_dealloc";
  if (LINGER_AFTER_DEALLOC) return "linger";
  return "as_filed";
}

static void emit_start(uint32_t dc, uint32_t sp, uint32_t md) {
  printf("{\"event\":\"start\",\"driver\":\"repro_instrumented\",\"pid\":%d,\"config\":"
         "{\"delay_cta\":%u,\"spin\":%u,\"mode\":%u,\"variant\":\"%s\",\"relinquish\":%s,"
         "\"dealloc\":%s,\"linger\":%s}}\n",
         (int)getpid(), dc, sp, md, variant_name(), NO_RELINQUISH ? "false" : "true",
         NO_DEALLOC ? "false" : "true", LINGER_AFTER_DEALLOC ? "true" : "false");
  fflush(stdout);
}

static void print_observations(const Markers* m) {
  printf("\"observations\":{");
  print_stages(m->stages, kStageNames);
  printf(",\"tmem_addr\":[");
  for (int c = 0; c < 2; c++) {
    if (m->tmem_seen[c]) printf("%s%u", c ? "," : "", m->tmem[c]);
    else printf("%snull", c ? "," : "");
  }
  printf("],\"variant\":\"%s\"}", variant_name());
}

int main(int argc, char** argv) {
  trial_seconds();
  uint32_t dc = (argc > 1) ? atoi(argv[1]) : 1;      // delay follower by default
  uint32_t sp = (argc > 2) ? atoi(argv[2]) : 5000;
  uint32_t md = (argc > 3) ? atoi(argv[3]) : 0;
  emit_start(dc, sp, md);

  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0)  // no driver, stub driver, or no device: nothing can run
    return emit_early("no_driver", "reason", e != cudaSuccess ? cudaGetErrorName(e) : "no device",
                      "cudaGetDeviceCount", 0, 3);
  cudaDeviceProp prop;
  if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
    return emit_early("cuda_error", "error", cudaGetErrorName(e), "cudaGetDeviceProperties", 0, 1);
  if ((e = cudaSetDeviceFlags(cudaDeviceMapHost)) != cudaSuccess)
    return emit_early("cuda_error", "error", cudaGetErrorName(e), "cudaSetDeviceFlags", 0, 1);

  Markers* hm = nullptr; Markers* dm = nullptr; const char* call = nullptr;
  if ((e = alloc_mapped(&hm, &dm, &call)) != cudaSuccess)
    return emit_early("cuda_error", "error", cudaGetErrorName(e), call, 0, 1);

  uint32_t* d = nullptr;
  if ((e = cudaMalloc(&d, 4096)) != cudaSuccess)
    return emit_early("cuda_error", "error", cudaGetErrorName(e), "cudaMalloc", 0, 1);

  ClusterLaunch launch(dim3(2, 1, 1), dim3(128, 1, 1), 2);
  e = cudaLaunchKernelEx(&launch.cfg, repro, d, dc, sp, md, dm);
  if (no_kernel_image(e)) {
    char reason[256];
    snprintf(reason, sizeof reason, "%s: %s is compute capability %d.%d; this build is for "
             "sm_100a/sm_103a only", cudaGetErrorName(e), prop.name, prop.major, prop.minor);
    for (char* p = reason; *p; p++) if (*p == '"' || *p == '\\') *p = '\'';
    return emit_early("unsupported", "reason", reason, "cudaLaunchKernelEx", 0, 3);
  }
  if (e != cudaSuccess)
    return emit_early("cuda_error", "error", cudaGetErrorName(e), "cudaLaunchKernelEx", 0, 1);

  e = cudaDeviceSynchronize();
  begin_final(e, "cudaDeviceSynchronize");
  print_observations(hm);
  printf("}\n");
  fflush(stdout);
  return (e == cudaSuccess) ? 0 : 1;
}
