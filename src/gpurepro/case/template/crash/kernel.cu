// The kernel under test. `trap` makes the control arm fault on purpose.
extern "C" __global__ void kernel(float *out, int trap) {
  if (trap) __trap();
  out[threadIdx.x] = threadIdx.x;
}
