// Progress markers for CUDA-runtime programs compiled with nvcc: lane 0 of each CTA's warp 0
// stores %globaltimer into mapped host memory (cudaHostAllocMapped) when it reaches a stage,
// then __threadfence_system(). Host memory outlives a sticky context error, so after a failed
// kernel the host still reads which stage each CTA reached, and when.
//
//   #include "stage_markers.cuh"
//   struct Markers { StageMarkers<2, N_STAGES> stages; ... };   // first member: &m->stages == m
//   device:  mark(&m->stages, rank, STAGE);
//   host:    alloc_mapped(&host, &device, &call);  ...  print_stages(host->stages, kStageNames);
//
// A marker costs a few global stores and a fence: compare an instrumented build with the plain
// one so that the perturbation is measured, not assumed.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

template <int CTAS, int STAGES>
struct StageMarkers {
  unsigned long long t[CTAS][STAGES];  // %globaltimer when the stage was reached; 0 = never
};

// Lane 0 of the calling warp's CTA (threadIdx.x == 0) only: call it from the warp observed.
template <int CTAS, int STAGES>
__device__ __forceinline__ void mark(StageMarkers<CTAS, STAGES>* m, uint32_t rank, int stage) {
  if (threadIdx.x == 0 && rank < CTAS) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t == 0) t = 1;
    *(volatile unsigned long long*)&m->t[rank][stage] = t;
    __threadfence_system();
  }
}

// A zeroed T in mapped host memory and its device address (cudaSetDeviceFlags(cudaDeviceMapHost)
// first); on an error, *call names the CUDA call that failed.
template <typename T>
cudaError_t alloc_mapped(T** host, T** device, const char** call) {
  *call = "cudaHostAlloc";
  cudaError_t e = cudaHostAlloc((void**)host, sizeof(T), cudaHostAllocMapped);
  if (e != cudaSuccess) return e;
  for (size_t i = 0; i < sizeof(T); i++) ((volatile char*)*host)[i] = 0;
  *call = "cudaHostGetDevicePointer";
  return cudaHostGetDevicePointer((void**)device, *host, 0);
}

// JSON members for a final record's observations: "stages" (each CTA's last stage reached, or
// "none") and "stage_times_ns" (each stage reached, in ns from the earliest marker of any CTA).
template <int CTAS, int STAGES>
void print_stages(const StageMarkers<CTAS, STAGES>& m, const char* const (&names)[STAGES]) {
  unsigned long long t0 = 0;
  for (int c = 0; c < CTAS; c++)
    for (int s = 0; s < STAGES; s++)
      if (m.t[c][s] && (t0 == 0 || m.t[c][s] < t0)) t0 = m.t[c][s];
  printf("\"stages\":{");
  for (int c = 0; c < CTAS; c++) {
    int last = -1;
    for (int s = 0; s < STAGES; s++) if (m.t[c][s]) last = s;
    printf("%s\"cta%d\":\"%s\"", c ? "," : "", c, last < 0 ? "none" : names[last]);
  }
  printf("},\"stage_times_ns\":{");
  for (int c = 0; c < CTAS; c++) {
    printf("%s\"cta%d\":{", c ? "," : "", c);
    int first = 1;
    for (int s = 0; s < STAGES; s++) {
      if (!m.t[c][s]) continue;
      printf("%s\"%s\":%llu", first ? "" : ",", names[s], m.t[c][s] - t0);
      first = 0;
    }
    printf("}");
  }
  printf("}");
}
