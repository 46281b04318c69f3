// Plain CUDA controls for the Tile IR kernel: same ABI (per array a pointer, then shape0, shape1,
// stride0, stride1 as int32), same extern "C" symbol, so the host driver launches any of them.
//
//   nvcc -arch=sm_90 -cubin -o plain_sm90.cubin kernel_cuda.cu
//   nvcc -arch=sm_90 -cubin -DWITH_MODULE_GLOBALS -o plain_globals_sm90.cubin kernel_cuda.cu
//
// Default: the reporter's kernel (seed/plain_kernel.cu), verbatim.
// WITH_MODULE_GLOBALS: the same kernel plus initialised __device__ data, so this cubin, like the
// Tile IR one, carries a .nv.global.init section that every module load must copy to the device
// and every unload must free. It separates "modules with initialised globals" from
// "Tile IR modules" (which additionally carry .nv.host).

#ifndef WITH_MODULE_GLOBALS

extern "C" __global__ void repro_kernel(float *a, int as0, int as1, int at0,
                                        int at1, float *b, int bs0, int bs1,
                                        int bt0, int bt1, float *c, int cs0,
                                        int cs1, int ct0, int ct1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < as0 * as1) c[i] = a[i] + b[i];
}

#else

// Non-zero initialisers: zero-initialised data would go to .nv.global (NOBITS) instead.
__device__ float g_bias[256] = {
#define R16(k) k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7, k + 8, \
               k + 9, k + 10, k + 11, k + 12, k + 13, k + 14, k + 15, k + 16
    R16(0),   R16(16),  R16(32),  R16(48),  R16(64),  R16(80),  R16(96),  R16(112),
    R16(128), R16(144), R16(160), R16(176), R16(192), R16(208), R16(224), R16(240),
#undef R16
};

extern "C" __global__ void repro_kernel(float *a, int as0, int as1, int at0,
                                        int at1, float *b, int bs0, int bs1,
                                        int bt0, int bt1, float *c, int cs0,
                                        int cs1, int ct0, int ct1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < as0 * as1) c[i] = a[i] + b[i] + g_bias[i & 255];  // uses the data: not optimised out
}

#endif
