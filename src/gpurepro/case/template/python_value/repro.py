# The reporter's program exactly as filed: replace this file with theirs, byte for byte (with
# any files it reads, beside it in seed/). `gpurepro new` wrote a stand-in that asks the CUDA
# driver, through cuda.bindings, how many devices there are and prints the answer: the value
# the case checks against the driver's own answer (answer.py).
from cuda.bindings import driver

err, = driver.cuInit(0)
if err != driver.CUresult.CUDA_SUCCESS:
    raise RuntimeError(f"cuInit failed: {err.name}")
err, count = driver.cuDeviceGetCount()
if err != driver.CUresult.CUDA_SUCCESS:
    raise RuntimeError(f"cuDeviceGetCount failed: {err.name}")
print(f"device count: {count}")
