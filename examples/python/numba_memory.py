# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's memory-management documentation, run on gpuhal.

The statements below are those of Numba's "Memory management" page and of
the increment_by_one program of its "Writing CUDA kernels" page, in their
order. Changed are the import line (``from numba import cuda`` becomes
``import gpuhal as cuda``) and the kernel: gpuhal does not compile Python
functions, so the kernel is written in gpuhal's portable C dialect, and it
takes the array's size as an argument (a kernel sees a plain pointer).
Run it with any backend: ``GPUHAL_BACKEND=host python numba_memory.py``.
"""

import numpy as np

import gpuhal as cuda  # was: from numba import cuda

# Numba:  @cuda.jit
#         def increment_by_one(an_array):
#             pos = cuda.grid(1)
#             if pos < an_array.size:
#                 an_array[pos] += 1
increment_by_one = cuda.compile("""
GPUHAL_KERNEL void increment_by_one(GPUHAL_GLOBAL double *an_array, long long size) {
  long long pos = gpuhal_global_id(0);
  if (pos < size) an_array[pos] += 1;
}""").increment_by_one

# ---- Writing CUDA kernels: kernel invocation -------------------------------
an_array = np.zeros(100)
threadsperblock = 32
blockspergrid = (an_array.size + (threadsperblock - 1)) // threadsperblock
increment_by_one[blockspergrid, threadsperblock](an_array, an_array.size)  # NumPy array: copied in and back
assert (an_array == 1).all()

# ---- Memory management: data transfer ----------------------------------------
ary = np.arange(10, dtype=np.float64)
d_ary = cuda.to_device(ary)
stream = cuda.stream()
d_ary = cuda.to_device(ary, stream=stream)
stream.synchronize()
hary = d_ary.copy_to_host(stream=stream)
stream.synchronize()
assert (hary == ary).all()
hary = np.empty(shape=d_ary.shape, dtype=d_ary.dtype)
d_ary.copy_to_host(hary, stream=stream)
stream.synchronize()
assert (hary == ary).all()

# ---- Device arrays --------------------------------------------------------------
devary = cuda.device_array(shape=(10,), dtype=np.float64)
devary_like = cuda.device_array_like(ary)
devary.copy_to_device(ary)
devary_like.copy_to_device(devary)
increment_by_one[1, 32](devary_like, devary_like.size)
assert (devary_like.copy_to_host() == ary + 1).all()

# ---- Streams: with stream.auto_synchronize() --------------------------------------
an_array = np.arange(64, dtype=np.float64)
stream = cuda.stream()
with stream.auto_synchronize():
    d_ary = cuda.to_device(an_array, stream=stream)
    increment_by_one[2, 32, stream](d_ary, d_ary.size)
    d_ary.copy_to_host(an_array, stream=stream)
assert (an_array == np.arange(64) + 1).all()

# ---- Pinned memory ------------------------------------------------------------------
ary = np.arange(1024, dtype=np.float64)
with cuda.pinned(ary):
    d_ary = cuda.to_device(ary)
    d_ary.copy_to_host(ary)
pinned = cuda.pinned_array((1024,), dtype=np.float64)
pinned[:] = ary
d_pinned = cuda.to_device(pinned)

# ---- Mapped memory --------------------------------------------------------------------
ary = np.zeros(32, dtype=np.float64)
with cuda.mapped(ary) as d_mapped:
    increment_by_one[1, 32](d_mapped, d_mapped.size)  # works on the host memory itself
    cuda.synchronize()
assert (ary == 1).all()
mapped = cuda.mapped_array(32, dtype=np.float64)
mapped[:] = 0
increment_by_one[1, 32](mapped, mapped.size)
cuda.synchronize()
assert (mapped == 1).all()

# ---- Deallocation behavior ---------------------------------------------------------------
with cuda.defer_cleanup():
    # all cleanup is deferred in here
    arrays = [cuda.device_array(1024) for _ in range(100)]
    del arrays  # 100 releases, none run in here
    assert len(cuda.current_context().deallocations) >= 100
cuda.current_context().deallocations.clear()
print("free, total:", cuda.current_context().get_memory_info())

print("numba_memory: OK on", cuda.backend())
