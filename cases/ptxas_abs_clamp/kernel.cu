// ptxas_abs_clamp: a gather index clamp(abs(m), 0, n-1), and two controls that each drop one
// half of it. Compiled to PTX once (nvcc -arch=sm_90 -ptx), then to SASS by every ptxas release
// under test, so the three kernels of one cubin come from the same ptxas run.
//
// A holds A[k] = k (18 elements), so out[i] = 3 * index: for m = -3..2 the reference of
// abs_clamp is [9, 6, 3, 0, 3, 6]; a ptxas that drops the abs gives [0, 0, 0, 0, 3, 6].
// driver.py computes every kernel's reference on the host and checks each element.

// The kernel under test: the four lines of the report (jax-ml/jax PR 24438).
extern "C" __global__ void abs_clamp(const int *m, const int *A, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j = abs(m[i]);
  j = max(0, min(j, 5));
  out[i] = A[j * 3];
}

// Control without the clamp: the abs alone (inputs stay within |m| <= 5, so A[j * 3] is in
// bounds). The abs must survive in every release.
extern "C" __global__ void abs_only(const int *m, const int *A, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j = abs(m[i]);
  out[i] = A[j * 3];
}

// Control without the abs: the clamp alone, negative indices read A[0] by design.
extern "C" __global__ void clamp_only(const int *m, const int *A, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j = max(0, min(m[i], 5));
  out[i] = A[j * 3];
}
