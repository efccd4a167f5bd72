"""The on-disk compile cache: one directory shared by processes, entries written atomically.

Three kinds of entry live there, each under the first two hex digits of its key:
- `<key>.o`: object code from the LLVM backend, keyed by the optimised program and the
  machine (backends/llvm/jit.py);
- `<key>.ir`: the IR a function's specialization (or one of its derivative programs) comes
  out of the pipeline with, keyed by a fingerprint of the function's source and everything its
  lowering reads (frontend/fingerprint.py), so a warm start skips the front end and the
  derivative transforms (api.py);
- `<key>.so`: a copy of scipy's OpenBLAS, which compiled code loads as a private instance
  (backends/llvm/blaslib.py), keyed by the library's path, size and time.

Every entry carries a checksum. A damaged entry is reported once and ignored, an unwritable
directory is reported once, and the caller compiles as if there were no cache.
"""

import hashlib
import os
import shutil
import tempfile
import warnings

_MAGIC = b"adcompile-cache-1\n"
_DIGEST = 64  # hex characters of a sha256


def cache_dir():
    """ADCOMPILE_CACHE_DIR, or <user cache dir>/adcompile; None when caching is off
    (ADCOMPILE_CACHE_DIR=off)."""
    configured = os.environ.get("ADCOMPILE_CACHE_DIR")
    if configured is not None:
        return None if configured.strip().lower() in ("", "0", "off", "none") else configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "adcompile")


def key_of(*parts):
    """A hex key from the parts' text (NUL-separated, so parts cannot run together)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


_compiler = []


def compiler_digest():
    """A digest of the compiler's source (adcompile/ and the derivative rules it reads from
    runtime/rules/): entries made by another version of the compiler are never reused."""
    if not _compiler:
        import runtime.rules

        here = os.path.dirname(os.path.abspath(__file__))
        _compiler.append(_source_digest(here, os.path.dirname(runtime.rules.__file__)))
    return _compiler[0]


def _source_digest(*folders):
    digest = hashlib.sha256()
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    digest.update(os.path.relpath(path, folder).encode() + b"\0")
                    with open(path, "rb") as f:
                        digest.update(f.read())
    return digest.hexdigest()


_warned = set()


def warn(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=5)


def load(key, suffix):
    """The bytes stored for `key`, or None. A damaged entry is reported and ignored."""
    directory = cache_dir()
    if directory is None:
        return None
    path = os.path.join(directory, key[:2], f"{key}.{suffix}")
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        warn(f"adcompile: cannot read the compile cache ({e}); compiling instead")
        return None
    head = len(_MAGIC) + _DIGEST
    if blob[:len(_MAGIC)] != _MAGIC or \
            hashlib.sha256(blob[head:]).hexdigest().encode() != blob[len(_MAGIC):head]:
        warn(f"adcompile: ignoring a damaged compile-cache entry {path}; compiling instead")
        return None
    return blob[head:]


def store(key, suffix, data):
    """Write atomically (a temporary file renamed into place): concurrent processes sharing
    the directory see either nothing or a whole entry."""
    directory = cache_dir()
    if directory is None:
        return
    _write(directory, key, suffix,
           lambda f: f.write(_MAGIC + hashlib.sha256(data).hexdigest().encode() + data))


def copy_in(key, suffix, source):
    """The path of a verbatim copy of file `source` kept as entry `key` (no header: a
    shared library the caller maps), made atomically if it is not there yet; None when
    caching is off or the copy cannot be made (reported once)."""
    directory = cache_dir()
    if directory is None:
        return None
    path = os.path.join(directory, key[:2], f"{key}.{suffix}")
    try:
        if os.path.getsize(path) == os.path.getsize(source):
            return path
    except OSError:
        pass

    def copy(target):
        with open(source, "rb") as f:
            shutil.copyfileobj(f, target, 1 << 22)
        os.fchmod(target.fileno(), 0o755)

    return path if _write(directory, key, suffix, copy) else None


def _write(directory, key, suffix, write):
    """Entry `key`.`suffix` written by write(file) into a temporary file renamed into
    place; whether it was (a failure is reported once)."""
    folder = os.path.join(directory, key[:2])
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, os.path.join(folder, f"{key}.{suffix}"))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        warn(f"adcompile: cannot write to the compile cache {directory} ({e}); compiled "
             f"code will not be reused by other processes")
        return False
    return True


def _entries(directory):
    """(path, suffix, size) of every entry and left-over temporary file under `directory`."""
    for sub in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
        folder = os.path.join(directory, sub)
        if len(sub) != 2 or not os.path.isdir(folder):
            continue  # not ours
        for name in sorted(os.listdir(folder)):
            suffix = "tmp" if name.startswith(".tmp-") else name.rpartition(".")[2]
            if suffix in ("o", "ir", "so", "tmp"):
                path = os.path.join(folder, name)
                yield path, suffix, os.path.getsize(path)


def summary():
    """{suffix: (entries, bytes)} of the cache directory ("o": object code, "ir": IR, "so":
    the copy of scipy's OpenBLAS that compiled code calls, backends/llvm/blaslib.py)."""
    counts = {}
    for _, suffix, size in _entries(cache_dir()):
        count, total = counts.get(suffix, (0, 0))
        counts[suffix] = (count + 1, total + size)
    return counts


def clear():
    """Remove every entry (and empty entry folders); returns (entries, bytes) removed."""
    directory = cache_dir()
    count = total = 0
    for path, _, size in list(_entries(directory)):
        os.unlink(path)
        count, total = count + 1, total + size
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:  # not empty yet
            pass
    return count, total
