// The few CUDA driver API types this project uses, declared here so host drivers build with g++
// alone: no CUDA headers at build time, libcuda reached through dlopen at run time.
// Values are from cuda.h (stable across 12.x/13.x).
#pragma once
#include <cstddef>

typedef int CUresult;  // an enum in cuda.h; int has the same ABI
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUdevice_attribute;
typedef int CUdriverProcAddressQueryResult;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

enum {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

// Names for the codes above, for when cuGetErrorName is unavailable (no driver, test drivers).
// Returns nullptr for codes not listed.
inline const char *cu_error_name_builtin(int code) {
  switch (code) {
#define N(x) \
  case x:    \
    return #x;
    N(CUDA_SUCCESS) N(CUDA_ERROR_INVALID_VALUE) N(CUDA_ERROR_OUT_OF_MEMORY)
    N(CUDA_ERROR_NOT_INITIALIZED) N(CUDA_ERROR_DEINITIALIZED) N(CUDA_ERROR_STUB_LIBRARY)
    N(CUDA_ERROR_INSUFFICIENT_DRIVER) N(CUDA_ERROR_NO_DEVICE) N(CUDA_ERROR_INVALID_DEVICE)
    N(CUDA_ERROR_INVALID_IMAGE) N(CUDA_ERROR_INVALID_CONTEXT) N(CUDA_ERROR_NO_BINARY_FOR_GPU)
    N(CUDA_ERROR_INVALID_PTX) N(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) N(CUDA_ERROR_INVALID_HANDLE)
    N(CUDA_ERROR_NOT_FOUND) N(CUDA_ERROR_ILLEGAL_ADDRESS) N(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    N(CUDA_ERROR_LAUNCH_TIMEOUT) N(CUDA_ERROR_ILLEGAL_INSTRUCTION)
    N(CUDA_ERROR_MISALIGNED_ADDRESS) N(CUDA_ERROR_LAUNCH_FAILED) N(CUDA_ERROR_NOT_SUPPORTED)
    N(CUDA_ERROR_UNKNOWN)
#undef N
    default:
      return nullptr;
  }
}
