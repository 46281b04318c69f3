// libcuda entry points as a table of function pointers, filled at run time (see cuda_loader.cc).
// A case that needs more of the driver API extends it from its own folder, without editing
// native/: declare the pointers, list them with CUDA_ENTRY, resolve them with
// cuda_load_entries() after cuda_load() (the rules are in native/README.md).
#pragma once
#include <stddef.h>

#include "cuda_types.h"

struct CudaApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute attr, CUdevice dev);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
  CUresult (*cuCtxCreate)(CUcontext *ctx, unsigned flags, CUdevice dev);  // the _v2 ABI (3.2)
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxDestroy)(CUcontext ctx);  // _v2
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);  // _v2
  CUresult (*cuMemFree)(CUdeviceptr ptr);                  // _v2
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);     // _v2
  CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned value, size_t count);         // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);       // _v2
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);             // _v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);       // _v2
  CUresult (*cuModuleLoadData)(CUmodule *mod, const void *image);
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *ptr, size_t *bytes, CUmodule mod,
                                const char *name);  // _v2
  CUresult (*cuModuleUnload)(CUmodule mod);
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                             void **params, void **extra);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamDestroy)(CUstream stream);  // _v2
  // Optional (CUDA 12.0+ drivers); nullptr when the driver lacks them.
  CUresult (*cuLibraryLoadData)(CUlibrary *lib, const void *code, CUjit_option *jit_opts,
                                void **jit_vals, unsigned n_jit, CUlibraryOption *lib_opts,
                                void **lib_vals, unsigned n_lib);
  CUresult (*cuLibraryGetKernel)(CUkernel *kernel, CUlibrary lib, const char *name);
  CUresult (*cuLibraryUnload)(CUlibrary lib);
};

extern CudaApi cu;

// dlopen("libcuda.so.1") and resolve every entry point. Does not return on failure: no library
// -> `final` no_driver (reason = dlerror()) and exit(3); a required symbol missing -> `final`
// unsupported and exit(3).
void cuda_load();

// One entry point to resolve: where to store it, its base name (what cuGetProcAddress wants),
// the CUDA version of the ABI the pointer's type declares (cudaTypedefs.h's
// PFN_<name>_v<version>, e.g. 3020 for cuMemsetD8's _v2), the export with that same ABI (the
// dlsym fallback for drivers without cuGetProcAddress_v2), and whether the trial is
// `unsupported` without it (else the pointer stays nullptr).
struct CudaEntry {
  void **slot;
  const char *name;
  int abi;
  const char *export_name;
  bool required;
};

// CUDA_ENTRY(table, field, abi, "export", required): the field's name is the base name, e.g.
//   struct { CUresult (*cuEventCreate)(CUevent *, unsigned); } ext;
//   const CudaEntry kExt[] = {CUDA_ENTRY(ext, cuEventCreate, 2000, "cuEventCreate", true)};
//   cuda_load(); cuda_load_entries(kExt);
#define CUDA_ENTRY(table, field, abi, export_name, required)                                 \
  CudaEntry { reinterpret_cast<void **>(&(table).field), #field, abi, export_name, required }

// Resolve a case's own entries after cuda_load(), by the same rules and with the same failure
// (a required one missing: `final` unsupported, exit 3).
void cuda_load_entries(const CudaEntry *entries, size_t n);
template <size_t N>
void cuda_load_entries(const CudaEntry (&entries)[N]) {
  cuda_load_entries(entries, N);
}

// One entry point by base name at an ABI version (after cuda_load()); nullptr if the driver has
// none. export_name (default: name) is the dlsym fallback. Typed: cuda_proc_as<Fn>(...).
void *cuda_proc(const char *name, int abi_version, const char *export_name = nullptr);
template <typename Fn>
Fn cuda_proc_as(const char *name, int abi_version, const char *export_name = nullptr) {
  return reinterpret_cast<Fn>(cuda_proc(name, abi_version, export_name));
}

// "CUDA_ERROR_LAUNCH_FAILED" etc.; works before/without cuda_load() (falls back to a built-in
// table, then "CUDA_ERROR_<n>"). The result stays valid for the life of the process.
const char *cu_error_name(int code);

// The failing call, recorded: r == CUDA_SUCCESS -> true; otherwise count the error and
// stop_with("cuda_error", name, call) (the first failure wins the final record, which then
// carries "error" and "call"), and return false. `call` must outlive the process (a literal).
bool cu_ok(CUresult r, const char *call);
