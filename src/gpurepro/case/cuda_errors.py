"""CUDA runtime error messages mapped back to their ``cudaError_t`` names, for a reporter's
program that prints ``cudaGetErrorString`` text: the harness classifies trials by error names.

    from gpurepro.case import cuda_errors
    cuda_errors.error_name("unspecified launch failure")   # "cudaErrorLaunchFailure"

Standard library only.
"""

from __future__ import annotations

# What other modules use; the rest is this module's own.
__all__ = ["error_name", "ERROR_NAMES", "NO_DRIVER", "UNSUPPORTED"]

# cudaGetErrorString text -> cudaError_t name, CUDA 13.0 runtime (texts read from
# libcudart_static.a of nvidia-cuda-runtime 13.0.96 and the comments in its driver_types.h).
ERROR_NAMES: dict[str, str] = {
    "no error": "cudaSuccess",
    "invalid argument": "cudaErrorInvalidValue",
    "out of memory": "cudaErrorMemoryAllocation",
    "initialization error": "cudaErrorInitializationError",
    "driver shutting down": "cudaErrorCudartUnloading",
    "CUDA driver is a stub library": "cudaErrorStubLibrary",
    "CUDA driver version is insufficient for CUDA runtime version": "cudaErrorInsufficientDriver",
    "no CUDA-capable device is detected": "cudaErrorNoDevice",
    "invalid device ordinal": "cudaErrorInvalidDevice",
    "invalid device function": "cudaErrorInvalidDeviceFunction",
    "invalid configuration argument": "cudaErrorInvalidConfiguration",
    "invalid resource handle": "cudaErrorInvalidResourceHandle",
    "device not ready": "cudaErrorNotReady",
    "no kernel image is available for execution on the device": "cudaErrorNoKernelImageForDevice",
    "the provided PTX was compiled with an unsupported toolchain.": "cudaErrorUnsupportedPtxVersion",
    "an illegal memory access was encountered": "cudaErrorIllegalAddress",
    "too many resources requested for launch": "cudaErrorLaunchOutOfResources",
    "the launch timed out and was terminated": "cudaErrorLaunchTimeout",
    "unspecified launch failure": "cudaErrorLaunchFailure",
    "an illegal instruction was encountered": "cudaErrorIllegalInstruction",
    "misaligned address": "cudaErrorMisalignedAddress",
    "operation not supported on global/shared address space": "cudaErrorInvalidAddressSpace",
    "invalid program counter": "cudaErrorInvalidPc",
    "hardware stack error": "cudaErrorHardwareStackError",
    "device-side assert triggered": "cudaErrorAssert",
    "uncorrectable ECC error encountered": "cudaErrorECCUncorrectable",
    "uncorrectable NVLink error detected during the execution": "cudaErrorNvlinkUncorrectable",
    "operation not supported": "cudaErrorNotSupported",
    "operation not permitted": "cudaErrorNotPermitted",
    "unknown error": "cudaErrorUnknown",
    "too many blocks in cooperative launch": "cudaErrorCooperativeLaunchTooLarge",
    "a kernel launch error has occurred due to cluster misconfiguration": "cudaErrorInvalidClusterSize",
    "cluster misconfiguration": "cudaErrorInvalidClusterSize",
    "unspecified launch failure in prior launch": "cudaErrorPriorLaunchFailure",
    "wait operation timed out": "cudaErrorTimeout",
    "system not yet initialized": "cudaErrorSystemNotReady",
    "CUDA-capable device(s) is/are busy or unavailable": "cudaErrorDevicesUnavailable",
    "device kernel image is invalid": "cudaErrorInvalidKernelImage",
}

# The device cannot run this build at all: not a finding about the bug.
UNSUPPORTED = {"cudaErrorNoKernelImageForDevice", "cudaErrorUnsupportedPtxVersion"}
NO_DRIVER = {"cudaErrorInsufficientDriver", "cudaErrorNoDevice", "cudaErrorStubLibrary"}


def error_name(message: str) -> str:
    """cudaError_t name for a cudaGetErrorString message; the message itself if unknown."""
    return ERROR_NAMES.get(message.strip(), message.strip())
