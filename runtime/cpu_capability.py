"""PyTorch's CPU capability on this host, as torch.backends.cpu.get_cpu_capability() reports
it, found without importing torch: which of its builds of a vectorized kernel PyTorch's
dispatch runs ("avx512", "avx2" or "default" on x86-64).

PyTorch compiles each kernel file once per capability and picks one build when the process
starts: the ATEN_CPU_CAPABILITY environment variable where it names one of those exactly
(lower case), else the best the CPU has: "avx512" with the AVX-512 VL, BW and DQ extensions
and FMA, "avx2" with AVX2 and FMA, else "default". Results depend on it: the AVX2 and AVX-512
builds are compiled with FMA, so the compiler fuses a product and a sum into one rounding
(tanh's derivative 1 - t * t), and vector widths set summation orders; kernels registered for
AVX2 only run their AVX2 build under "avx512" too.
"""

import functools
import os

CAPABILITIES = ("default", "avx2", "avx512")
_NEEDS = {"avx512": ("avx512vl", "avx512bw", "avx512dq", "fma"), "avx2": ("avx2", "fma")}


@functools.cache
def capability():
    """"avx512", "avx2" or "default" (read once per process, as PyTorch reads it)."""
    chosen = os.environ.get("ATEN_CPU_CAPABILITY")
    if chosen in CAPABILITIES:
        return chosen
    flags = _cpu_flags()
    for name in ("avx512", "avx2"):
        if all(flag in flags for flag in _NEEDS[name]):
            return name
    return "default"


def has_fma():
    """Whether PyTorch's vectorized kernels here are a build compiled with FMA."""
    return capability() != "default"


@functools.cache
def vendor():
    """The CPU's vendor string ("GenuineIntel", "AuthenticAMD"; "" where unknown): MKL picks
    its kernels by it as well as by the instruction sets, so where PyTorch's results are
    MKL's, an emulation measured on one vendor's CPUs holds there only."""
    return _cpuinfo_field("vendor_id")


def _cpu_flags():
    """The CPU's feature flags (Linux's /proc/cpuinfo); none where it cannot be read."""
    return set(_cpuinfo_field("flags").split())


def _cpuinfo_field(name):
    """The first processor's `name` line of /proc/cpuinfo ("" where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""
