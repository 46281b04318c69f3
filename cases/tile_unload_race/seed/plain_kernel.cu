extern "C" __global__ void repro_kernel(float *a, int as0, int as1, int at0,
                                        int at1, float *b, int bs0, int bs1,
                                        int bt0, int bt1, float *c, int cs0,
                                        int cs1, int ct0, int ct1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < as0 * as1) c[i] = a[i] + b[i];
}
