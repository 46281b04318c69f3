// Reaches libcuda at run time, so host drivers link anywhere (no driver, no CUDA headers).
// Compiled as part of each host driver, e.g.
//   g++ -O2 -pthread -std=c++17 -fno-omit-frame-pointer -static-libstdc++ -static-libgcc host.cc native/cuda_loader.cc native/events.cc native/crash.cc -o host -ldl
//
// Entry points come from cuGetProcAddress_v2, each asked for at the CUDA version whose ABI our
// declaration in cuda_loader.h has (cudaTypedefs.h's PFN_<name>_v<version>): the driver hands out
// the newest variant of a name introduced at or before the version asked for, and one global
// version is wrong for some names. Measured on driver 580 (H200): "cuCtxCreate" at 12000 is the
// 11.4 _v3 ABI (ctx, affinity params, count, flags, dev), so calling it as _v2 failed with
// CUDA_ERROR_INVALID_DEVICE; at 3020 it is _v2. Where cuGetProcAddress_v2 is missing (pre-12.0
// drivers) or fails, dlsym of the versioned export is the fallback.
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
  const char *name;     // base name, as cuGetProcAddress wants it
  int abi;              // CUDA version that introduced the ABI we declare (cudaTypedefs.h)
  const char *export_;  // the same ABI's export name, for dlsym
  bool required;
};

#define E(field, abi, exp, req) {reinterpret_cast<void **>(&cu.field), #field, abi, exp, req}
const Entry kEntries[] = {
    E(cuInit, 2000, "cuInit", true),
    E(cuDriverGetVersion, 2020, "cuDriverGetVersion", true),
    E(cuGetErrorName, 6000, "cuGetErrorName", true),
    E(cuDeviceGet, 2000, "cuDeviceGet", true),
    E(cuDeviceGetAttribute, 2000, "cuDeviceGetAttribute", true),
    E(cuDeviceGetName, 2000, "cuDeviceGetName", true),
    E(cuCtxCreate, 3020, "cuCtxCreate_v2", true),  // not 11040 (_v3) nor 12050 (_v4)
    E(cuCtxSetCurrent, 4000, "cuCtxSetCurrent", true),
    E(cuCtxDestroy, 4000, "cuCtxDestroy_v2", true),
    E(cuCtxSynchronize, 2000, "cuCtxSynchronize", true),  // 13000 takes a context argument
    E(cuMemAlloc, 3020, "cuMemAlloc_v2", true),            // 2000 is the 32-bit one
    E(cuModuleLoadData, 2000, "cuModuleLoadData", true),
    E(cuModuleGetFunction, 2000, "cuModuleGetFunction", true),
    E(cuModuleUnload, 2000, "cuModuleUnload", true),
    E(cuLaunchKernel, 4000, "cuLaunchKernel", true),  // flags 0: legacy default stream
    E(cuLibraryLoadData, 12000, "cuLibraryLoadData", false),
    E(cuLibraryGetKernel, 12000, "cuLibraryGetKernel", false),
    E(cuLibraryUnload, 12000, "cuLibraryUnload", false),
};
#undef E

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
    if (gpa && gpa(e.name, &fn, e.abi, 0, &st) != CUDA_SUCCESS) fn = nullptr;
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
