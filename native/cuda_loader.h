// libcuda entry points as a table of function pointers, filled at run time (see cuda_loader.cc).
#pragma once
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
  CUresult (*cuModuleLoadData)(CUmodule *mod, const void *image);
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
  CUresult (*cuModuleUnload)(CUmodule mod);
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                             void **params, void **extra);
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

// "CUDA_ERROR_LAUNCH_FAILED" etc.; works before/without cuda_load() (falls back to a built-in
// table, then "CUDA_ERROR_<n>"). The result stays valid for the life of the process.
const char *cu_error_name(int code);
