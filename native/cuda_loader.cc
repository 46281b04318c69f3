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

void *g_lib;               // the dlopen handle
GetProcAddressFn g_gpa;    // cuGetProcAddress_v2, or nullptr (pre-12.0 drivers)

#define E(field, abi, exp, req) CUDA_ENTRY(cu, field, abi, exp, req)
const CudaEntry kEntries[] = {
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
    E(cuMemFree, 3020, "cuMemFree_v2", true),
    E(cuMemsetD8, 3020, "cuMemsetD8_v2", true),
    E(cuMemsetD32, 3020, "cuMemsetD32_v2", true),
    E(cuMemcpyHtoD, 3020, "cuMemcpyHtoD_v2", true),
    E(cuMemcpyDtoH, 3020, "cuMemcpyDtoH_v2", true),
    E(cuMemcpyDtoD, 3020, "cuMemcpyDtoD_v2", true),
    E(cuModuleLoadData, 2000, "cuModuleLoadData", true),
    E(cuModuleGetFunction, 2000, "cuModuleGetFunction", true),
    E(cuModuleGetGlobal, 3020, "cuModuleGetGlobal_v2", true),
    E(cuModuleUnload, 2000, "cuModuleUnload", true),
    E(cuLaunchKernel, 4000, "cuLaunchKernel", true),  // flags 0: legacy default stream
    E(cuStreamCreate, 2000, "cuStreamCreate", true),
    E(cuStreamSynchronize, 2000, "cuStreamSynchronize", true),
    E(cuStreamDestroy, 4000, "cuStreamDestroy_v2", true),
    E(cuLibraryLoadData, 12000, "cuLibraryLoadData", false),
    E(cuLibraryGetKernel, 12000, "cuLibraryGetKernel", false),
    E(cuLibraryUnload, 12000, "cuLibraryUnload", false),
};
#undef E

}  // namespace

void *cuda_proc(const char *name, int abi_version, const char *export_name) {
  if (!g_lib) return nullptr;
  void *fn = nullptr;
  CUdriverProcAddressQueryResult st = 0;
  if (g_gpa && g_gpa(name, &fn, abi_version, 0, &st) != CUDA_SUCCESS) fn = nullptr;
  if (!fn) fn = dlsym(g_lib, export_name ? export_name : name);
  return fn;
}

void cuda_load_entries(const CudaEntry *entries, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const CudaEntry &e = entries[i];
    void *fn = cuda_proc(e.name, e.abi, e.export_name);
    if (!fn && e.required) {
      const char *what = e.export_name ? e.export_name : e.name;
      emit_final("unsupported",
                 "\"reason\":" + json_quote((std::string("libcuda lacks ") + what).c_str()));
      exit(3);
    }
    *e.slot = fn;
  }
}

void cuda_load() {
  g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) {
    const char *err = dlerror();
    emit_final("no_driver", "\"reason\":" + json_quote(err ? err : "dlopen failed"));
    exit(3);
  }
  g_gpa = reinterpret_cast<GetProcAddressFn>(dlsym(g_lib, "cuGetProcAddress_v2"));
  cuda_load_entries(kEntries);
}

bool cu_ok(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return true;
  errors_record(r);
  stop_with("cuda_error", cu_error_name(r), call);
  return false;
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
