"""Private numba kernels.  They validate nothing, fill a caller's ``out`` and are cached."""

# every kernel module is imported through this package, so what is done here precedes any
# kernel's compilation or loading from numba's on-disk cache:
# - numba's compile event (sent only when a kernel is compiled, not when it is loaded from
#   the cache) prints dpfast's one-time compile notice (dpfast._parallel.notice);
# - the C functions kernels call by name (the refills' ChaCha20) are registered with LLVM
#   (an unresolved name would abort the process).
from dpfast import _native, _parallel

_parallel.install_compile_notice()
_native.register_kernel_symbols()
