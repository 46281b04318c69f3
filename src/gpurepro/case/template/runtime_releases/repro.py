# The reporter's program exactly as filed: replace this file with theirs, byte for byte (with
# any files it reads, beside it in seed/). `gpurepro new` wrote a stand-in that asks the CUDA
# driver, through cuda.bindings, for a device, its primary context and some memory, then
# synchronizes; a failed call raises with the error's name, as such programs do.
from cuda.bindings import driver


def check(result, call):
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{call} failed: {err.name}")
    return values[0] if values else None


check(driver.cuInit(0), "cuInit")
device = check(driver.cuDeviceGet(0), "cuDeviceGet")
context = check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
memory = check(driver.cuMemAlloc(1 << 20), "cuMemAlloc")
check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
check(driver.cuMemFree(memory), "cuMemFree")
print("done")
