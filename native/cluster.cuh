// Thread-block clusters, for CUDA-runtime programs compiled with nvcc (sm_90 and later):
// device helpers a cluster kernel uses and the launch configuration of a cluster.
//
//   #include "cluster.cuh"            (nvcc -I native, or -I{native} in an artifact command)
//   ClusterLaunch launch(dim3(2), dim3(128), 2);
//   cudaLaunchKernelEx(&launch.cfg, kernel, args...);
//
// Every helper is __forceinline__ asm, so a kernel compiles to the code it had with the same
// lines written in its own file.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t ctarank() {
  uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
// barrier.cluster: every thread of every CTA of the cluster arrives, then waits.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;"   ::: "memory");
}
// The 32-bit shared-window address of a __shared__ variable (what tcgen05/mbarrier operands take).
__device__ __forceinline__ uint32_t smem_u32(void* p) {
  uint32_t r;
  asm volatile("{ .reg .u64 u; cvta.to.shared.u64 u, %1; cvt.u32.u64 %0, u; }"
               : "=r"(r) : "l"(p));
  return r;
}

// cudaLaunchKernelEx's configuration for clusters of `cluster_x` CTAs along x. Not copyable:
// cfg.attrs points into the object itself.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  ClusterLaunch(dim3 grid, dim3 block, unsigned cluster_x) {
    cfg.gridDim = grid;
    cfg.blockDim = block;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster_x; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr; cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};
