// What host drivers share beside the loader and the events: a driver call with its thread's
// phase published around it, a failed call stopping the trial as the final record names it,
// and the device facts of the final record. Header only; nothing here adds work to a measured
// loop (PHASED is the two phase stores a hand-written call site makes).
#pragma once

#include <stdio.h>
#include <unistd.h>

#include <string>

#include "cuda_loader.h"
#include "events.h"

// One driver call with the thread's phase published around it (events.h, PhaseSlot: read by
// the crash handler); `r`, a CUresult in scope, holds what the call returned.
#define PHASED(ps, id, expr) (phase_enter(ps, id), r = (expr), phase_exit(ps), r)

// A failed call stops the trial. A load the device cannot run at all, on a thread's first load
// (`first_load`), makes it `unsupported`, the reason written into `reason` (which must live as
// long as the process: the final record reads it at exit); anything else is a `cuda_error`.
inline void fail_call(CUresult r, const char *call, bool first_load, char *reason, size_t size) {
  errors_record(r);
  const char *name = cu_error_name(r);
  if (first_load && (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE ||
                     r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)) {
    snprintf(reason, size, "%s: %s on the first load", call, name);
    stop_with("unsupported", name, call, reason);
  } else {
    stop_with("cuda_error", name, call);
  }
}

// Setup failed before any worker ran: no device or no usable driver is `unsupported`, any other
// error a `cuda_error`; the final record is written and the process exits.
[[noreturn]] inline void setup_failed(CUresult r, const char *call) {
  errors_record(r);
  const char *name = cu_error_name(r);
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INSUFFICIENT_DRIVER ||
      r == CUDA_ERROR_STUB_LIBRARY)
    stop_with("unsupported", name, call, name);
  else
    stop_with("cuda_error", name, call);
  _exit(finish());
}

// Device facts for the final record's observations (the harness fingerprints the machine
// separately): {"device":{"name":...,"compute_capability":"9.0","cuda_driver_version":N}}.
inline std::string device_json(CUdevice dev) {
  char name[256] = "";
  int major = 0, minor = 0, version = 0;
  cu.cuDeviceGetName(name, sizeof name, dev);
  cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  cu.cuDriverGetVersion(&version);
  return "{\"device\":{\"name\":" + json_quote(name) + ",\"compute_capability\":\"" +
         std::to_string(major) + "." + std::to_string(minor) +
         "\",\"cuda_driver_version\":" + std::to_string(version) + "}}";
}
