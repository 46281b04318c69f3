// Host driver for case CASE_NAME (protocol: native/README.md): load the cubin, launch `kernel` in
// a loop on a worker thread, heartbeat from main, join the worker, name the call that failed.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <iterator>
#include <string>

#include "../../native/crash.h"
#include "../../native/cuda_loader.h"
#include "../../native/events.h"

namespace {

std::string g_image;
int g_trap = 0;
Counter c_launches;
uint64_t g_max_launches = 0;

void *work(void *) {
  install_thread_altstack();
  CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction fn; CUdeviceptr out;
  // cu_ok records a failed call, stops everyone and names the call in the final record.
  if (!cu_ok(cu.cuDeviceGet(&dev, 0), "cuDeviceGet")) return nullptr;
  if (!cu_ok(cu.cuCtxCreate(&ctx, 0, dev), "cuCtxCreate")) return nullptr;
  if (CUresult r = cu.cuModuleLoadData(&mod, g_image.data())) {  // a cubin this device cannot run
    errors_record(r);
    bool cannot = r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE;
    stop_with(cannot ? "unsupported" : "cuda_error", cu_error_name(r), "cuModuleLoadData",
              cannot ? "the device cannot load this cubin" : nullptr);
    return nullptr;
  }
  if (!cu_ok(cu.cuModuleGetFunction(&fn, mod, "kernel"), "cuModuleGetFunction")) return nullptr;
  if (!cu_ok(cu.cuMemAlloc(&out, 32 * sizeof(float)), "cuMemAlloc")) return nullptr;
  void *args[] = {&out, &g_trap};
  const uint64_t budget = g_max_launches ? g_max_launches : UINT64_MAX;
  while (!stop_requested()) {
    if (!cu_ok(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel")) break;
    if (!cu_ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")) break;
    if (c_launches.inc() >= budget) { stop_with("ok"); break; }
  }
  return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  const char *cubin = nullptr, *mode = "normal";
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--cubin")) cubin = argv[i + 1];
    else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-launches")) g_max_launches = strtoull(argv[i + 1], nullptr, 10);
  }
  if (!cubin) { fprintf(stderr, "usage: host --cubin K.cubin [--mode normal|trap] [--seconds S]\n"); return 2; }
  std::ifstream in(cubin, std::ios::binary);
  g_image.assign(std::istreambuf_iterator<char>(in), {});
  g_trap = !strcmp(mode, "trap");
  install_crash_handler();
  set_error_namer(cu_error_name);
  c_launches = counter("launches");
  emit_start("CASE_NAME/host", std::string("{\"mode\":") + json_quote(mode) + "}");
  cuda_load();
  if (CUresult r = cu.cuInit(0)) { stop_with("no_driver", cu_error_name(r), "cuInit", "cuInit failed"); return finish(); }
  pthread_t worker;
  pthread_create(&worker, nullptr, work, nullptr);
  run_until(seconds, nullptr, 0, 200);
  join_workers(&worker, 1, 0, 200);  // with no deadline, a kernel that never returns is `hung`
  return finish();
}
