"""The BLAS and LAPACK that compiled code calls: scipy's OpenBLAS, as a private instance.

scipy exports its BLAS/LAPACK routines as function pointers (scipy.linalg.cython_blas and
cython_lapack), which is how numba reaches them too. Called as they are, they run on
OpenBLAS's own threads, whose count is a global of the library (scipy's calls share it) and
which spin while they wait for work: when more threads want the cores than there are (two
processes of a test run, a user's multiprocessing pool), each product waits for a thread the
kernel has put aside, and a gradient of GradBench's gmm measured 20-40x slower (3 processes
on 2 cores: 12-18 s against 0.4-0.9 s per 3 calls). Compiled code has its own pool for that
(pool.py: the caller works too, pieces are taken as threads come free, idle workers sleep),
and set_num_threads governs it.

So compiled code calls a second copy of the same library, loaded from a copy of its file in
the on-disk cache (adcompile/cache.py; from memory, memfd, when the cache is off) with
OPENBLAS_NUM_THREADS=1: its globals are its own, it never starts a thread, and scipy's copy
(what `scipy.linalg` and the user call) keeps its settings. Large products are split over
the pool's threads by the caller (linalg.py: bands of rows, each one call on one thread).
The copy is the same machine code as scipy's, so the bits are those of scipy's routines.
Where it cannot be made (no memfd, the library not found) compiled code calls scipy's
pointers as they are. ADCOMPILE_PRIVATE_BLAS=0 asks for that too.
"""

import ctypes
import os
import shutil
import threading

from adcompile import cache

_lock = threading.Lock()
_instance = None  # ctypes.CDLL of the private copy; False when it could not be made


def private(addresses):
    """{key: address in the private copy} for {"..._<routine>": address of scipy's wrapper
    of <routine>}; the addresses as given where no private copy can be made."""
    if not addresses or os.environ.get("ADCOMPILE_PRIVATE_BLAS", "1") == "0":
        return dict(addresses)
    path = library()
    lib = _load(path) if path else None
    if not lib:
        return dict(addresses)
    moved = {}
    for key in addresses:
        routine = key.rsplit("_", 1)[1]
        found = [f"{prefix}{routine}_" for prefix in ("scipy_", "")
                 if hasattr(lib, f"{prefix}{routine}_")]
        if not found:
            return dict(addresses)
        moved[key] = ctypes.cast(getattr(lib, found[0]), ctypes.c_void_p).value
    return moved


def library():
    """The file of the OpenBLAS that scipy's wheels ship (scipy.libs/libscipy_openblas*),
    as this process has it mapped; None for a scipy built against another BLAS."""
    try:
        import scipy
    except ImportError:
        return None
    folder = os.path.realpath(os.path.join(os.path.dirname(scipy.__file__), "..",
                                           "scipy.libs"))
    try:
        with open("/proc/self/maps") as maps:
            mapped = {line.split(None, 5)[-1].strip() for line in maps if "/" in line}
    except OSError:
        return None
    for path in sorted(mapped):
        name = os.path.basename(path)
        if os.path.dirname(os.path.realpath(path)) == folder and \
                name.startswith("libscipy_openblas"):
            return path
    return None


def _load(path):
    global _instance
    with _lock:
        if _instance is None:
            _instance = _copy(path) or False
        return _instance


def store_in_cache():
    """Put the copy of scipy's OpenBLAS in the on-disk cache if it is not there (a process
    that loaded its copy while the cache was off, or from another cache directory, left
    none for the processes after it)."""
    path = library()
    if path:
        _cached(path)


def _cached(path):
    stat = os.stat(path)
    return cache.copy_in(cache.key_of("openblas", os.path.realpath(path), stat.st_size,
                                      stat.st_mtime_ns), "so", path)


def _copy(path):
    """The library at `path` loaded a second time, on one thread: from its copy in the
    on-disk cache (made by the first process; mapping it takes about 2 ms, where copying its
    25 MB into memory took 25-40 ms in every process), else from memory (memfd)."""
    copy = _cached(path)
    lib = _one_thread(copy) if copy else None
    if lib is None:
        lib = _from_memory(path)
    if lib is None:
        return None
    for setter in ("scipy_openblas_set_num_threads", "openblas_set_num_threads"):
        if hasattr(lib, setter):
            getattr(lib, setter)(ctypes.c_int(1))
            break
    return lib


def _from_memory(path):
    if not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("adcompile-openblas", 0)
    except OSError:
        return None
    try:
        with open(path, "rb") as source, os.fdopen(os.dup(fd), "wb") as target:
            shutil.copyfileobj(source, target, 1 << 22)
        return _one_thread(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)  # the mapping stays


def _one_thread(path):
    """The library file at `path` (another file than scipy's: the loader maps it again)
    loaded with OPENBLAS_NUM_THREADS=1, read by its constructor; None if it cannot be."""
    saved = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        return ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
    except OSError:
        return None
    finally:
        if saved is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = saved


def threads():
    """The private copy's thread count (1), or None when there is none."""
    lib = _instance
    for getter in ("scipy_openblas_get_num_threads", "openblas_get_num_threads"):
        if lib and hasattr(lib, getter):
            return getattr(lib, getter)()
    return None
