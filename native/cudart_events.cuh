// The JSON-lines protocol (native/README.md) for CUDA-runtime programs compiled with nvcc, whose
// errors are cudaError_t names (cudaGetErrorName). The program prints its own start record and
// observations; these print the final record.
#pragma once
#include <cstdio>
#include <ctime>
#include <cuda_runtime.h>

// Seconds since the first call (call it first thing in main).
static double trial_seconds() {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  static const double t0 = ts.tv_sec + ts.tv_nsec * 1e-9;
  return ts.tv_sec + ts.tv_nsec * 1e-9 - t0;
}

// A whole final record for a failure before the kernel ran ("key" is "error" or "reason");
// returns the exit status `rc`.
static int emit_early(const char* status, const char* key, const char* value, const char* call,
                      int launches, int rc) {
  printf("{\"event\":\"final\",\"status\":\"%s\",\"%s\":\"%s\",\"call\":\"%s\",\"t\":%.6f,"
         "\"counters\":{\"launches\":%d},\"errors\":{}}\n",
         status, key, value, call, trial_seconds(), launches);
  fflush(stdout);
  return rc;
}

// The errors of a launch that mean this device cannot run the build at all.
static bool no_kernel_image(cudaError_t e) {
  return e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ||
         e == cudaErrorUnsupportedPtxVersion;
}

// The head of a final record after one launch ended with `e` at `call`, up to and including the
// comma after "errors": the caller prints its "observations" and the closing brace.
static void begin_final(cudaError_t e, const char* call) {
  if (e == cudaSuccess)
    printf("{\"event\":\"final\",\"status\":\"ok\",\"t\":%.6f,\"counters\":{\"launches\":1},"
           "\"errors\":{},", trial_seconds());
  else
    printf("{\"event\":\"final\",\"status\":\"cuda_error\",\"error\":\"%s\",\"call\":"
           "\"%s\",\"t\":%.6f,\"counters\":{\"launches\":1},\"errors\":{\"%s\":1},",
           cudaGetErrorName(e), call, trial_seconds(), cudaGetErrorName(e));
}
