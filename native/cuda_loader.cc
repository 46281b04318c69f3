// Reaches libcuda at run time, so host drivers link anywhere (no driver, no CUDA headers).
// Compiled as part of each host driver, e.g.
//   g++ -O2 -pthread -std=c++17 -fno-omit-frame-pointer -static-libstdc++ -static-libgcc host.cc native/cuda_loader.cc native/events.cc native/crash.cc -o host -ldl
//
// Entry points come from cuGetProcAddress_v2 at cudaVersion 12000: the driver then hands out
// the ABI each name had in CUDA 12.0 (cuCtxCreate -> _v2; at 13.x it would be _v4, a different
// signature). Older drivers, or a lookup failure, fall back to dlsym of the versioned export.
#include "cuda_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <mutex>
#include <string>

#include "events.h"

CudaApi cu;

namespace {

typedef CUresult (*GetProcAddressFn)(const char *symbol, void **pfn, int cuda_version,
                                     unsigned long long flags,
                                     CUdriverProcAddressQueryResult *status);

struct Entry {
  void **slot;
  const char *name;    // base name, as cuGetProcAddress wants it
  const char *export_; // versioned export name, for dlsym
  bool required;
};

#define E(field, exp, req) {reinterpret_cast<void **>(&cu.field), #field, exp, req}
const Entry kEntries[] = {
    E(cuInit, "cuInit", true),
    E(cuDriverGetVersion, "cuDriverGetVersion", true),
    E(cuGetErrorName, "cuGetErrorName", true),
    E(cuDeviceGet, "cuDeviceGet", true),
    E(cuDeviceGetAttribute, "cuDeviceGetAttribute", true),
    E(cuDeviceGetName, "cuDeviceGetName", true),
    E(cuCtxCreate, "cuCtxCreate_v2", true),
    E(cuCtxSetCurrent, "cuCtxSetCurrent", true),
    E(cuCtxDestroy, "cuCtxDestroy_v2", true),
    E(cuCtxSynchronize, "cuCtxSynchronize", true),
    E(cuMemAlloc, "cuMemAlloc_v2", true),
    E(cuModuleLoadData, "cuModuleLoadData", true),
    E(cuModuleGetFunction, "cuModuleGetFunction", true),
    E(cuModuleUnload, "cuModuleUnload", true),
    E(cuLaunchKernel, "cuLaunchKernel", true),
    E(cuLibraryLoadData, "cuLibraryLoadData", false),
    E(cuLibraryGetKernel, "cuLibraryGetKernel", false),
    E(cuLibraryUnload, "cuLibraryUnload", false),
};
#undef E

const int kAbiVersion = 12000;  // see the header comment: never a 13.x value here

}  // namespace

void cuda_load() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    emit_final("no_driver", "\"reason\":" + json_quote(err ? err : "dlopen failed"));
    exit(3);
  }
  auto gpa = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  for (const Entry &e : kEntries) {
    void *fn = nullptr;
    CUdriverProcAddressQueryResult st = 0;
    if (gpa && gpa(e.name, &fn, kAbiVersion, 0, &st) != CUDA_SUCCESS) fn = nullptr;
    if (!fn) fn = dlsym(lib, e.export_);
    if (!fn && e.required) {
      emit_final("unsupported",
                 "\"reason\":" + json_quote((std::string("libcuda lacks ") + e.export_).c_str()));
      exit(3);
    }
    *e.slot = fn;
  }
}

const char *cu_error_name(int code) {
  const char *name = nullptr;
  if (cu.cuGetErrorName && cu.cuGetErrorName(code, &name) == CUDA_SUCCESS && name) return name;
  if ((name = cu_error_name_builtin(code))) return name;
  // Unknown code: intern "CUDA_ERROR_<n>" once per code so the pointer stays valid. Error
  // path only, so a mutex is fine here.
  static std::mutex mu;
  static struct { int code; char name[32]; } table[16];
  static int used;
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < used; ++i)
    if (table[i].code == code) return table[i].name;
  if (used == 16) return "CUDA_ERROR_UNRECOGNIZED";
  table[used].code = code;
  snprintf(table[used].name, sizeof table[used].name, "CUDA_ERROR_%d", code);
  return table[used++].name;
}
