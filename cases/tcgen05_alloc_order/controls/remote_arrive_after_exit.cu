// Control without tcgen05, for the mechanism the SASS analysis reads out of the
// tcgen05.alloc.cta_group::2 lowering, with instructions that exist on sm_90 (Hopper): the odd CTA
// of a cluster pair performs, after a delay, the remote operation the follower's alloc ends with
// (mbarrier.arrive.release.cluster.shared::cluster, SASS SYNCS.ARRIVE.TRANS64.RED.A1T0) on the
// even CTA's shared memory, while the even CTA may already have exited (README.md, "Arms").
//   mode 0: the even CTA exits right away (the reproducer's leader, which never waits for the ack)
//   mode 1: barrier.cluster before exit in both CTAs (the mitigation)
//   op   0: remote mbarrier arrive (the ack); 1: remote st.shared::cluster.u32 (like the STAS)
// usage: remote_arrive_after_exit SPIN MODE OP; output and exit status as repro_instrumented's.
#include <cstdint>
#include <cstdlib>
#include "cluster.cuh"
#include "cudart_events.cuh"

extern "C" __global__ void __cluster_dims__(2, 1, 1)
k(uint32_t spin, uint32_t mode, uint32_t op) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ uint32_t word;
  uint32_t rank = ctarank();
  uint32_t a = (uint32_t)__cvta_generic_to_shared(&bar);
  uint32_t w = (uint32_t)__cvta_generic_to_shared(&word);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(1) : "memory");
    word = 0;
  }
  cluster_sync();  // both CTAs resident and initialised
  if (rank == 1) {
    for (uint32_t i = 0; i < spin; i++) __nanosleep(1000);
    if (threadIdx.x == 0) {
      uint32_t ra, rw;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(0));
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rw) : "r"(w), "r"(0));
      if (op == 0)
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(ra) : "memory");
      else
        asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(rw), "r"(1) : "memory");
    }
  }
  if (mode == 1) cluster_sync();
}

int main(int argc, char** argv) {
  trial_seconds();
  uint32_t sp = (argc > 1) ? atoi(argv[1]) : 5000;
  uint32_t md = (argc > 2) ? atoi(argv[2]) : 0;
  uint32_t op = (argc > 3) ? atoi(argv[3]) : 0;
  printf("{\"event\":\"start\",\"driver\":\"remote_arrive_after_exit\",\"config\":"
         "{\"spin\":%u,\"mode\":%u,\"op\":\"%s\"}}\n", sp, md, op ? "store" : "arrive");
  fflush(stdout);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0)  // no driver, stub driver, or no device: nothing can run
    return emit_early("no_driver", "reason", e != cudaSuccess ? cudaGetErrorName(e) : "no device",
                      "cudaGetDeviceCount", 0, 3);
  ClusterLaunch launch(dim3(2, 1, 1), dim3(128, 1, 1), 2);
  e = cudaLaunchKernelEx(&launch.cfg, k, sp, md, op);
  if (e != cudaSuccess)
    return no_kernel_image(e)
        ? emit_early("unsupported", "reason", cudaGetErrorName(e), "cudaLaunchKernelEx", 0, 3)
        : emit_early("cuda_error", "error", cudaGetErrorName(e), "cudaLaunchKernelEx", 0, 1);
  e = cudaDeviceSynchronize();
  begin_final(e, "cudaDeviceSynchronize");
  printf("\"observations\":{}}\n");
  return e == cudaSuccess ? 0 : 1;
}
