"""The device queries of a CPU-only library: `torch.cuda`, `torch.accelerator`, `torch.mps`,
`torch.backends.*` and the default device, answering as PyTorch does on a machine without
accelerators, so scripts that probe for a GPU pick the CPU and carry on."""

import types

from runtime.creation import device

_default_device = [device("cpu")]


def _unavailable(name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} is not available: adcompile runs on the CPU only")
    fail.__name__ = name
    return fail


def _false():
    return False


def _zero():
    return 0


cuda = types.SimpleNamespace(
    is_available=_false, device_count=_zero, is_initialized=_false,
    current_device=_unavailable("CUDA"), get_device_name=_unavailable("CUDA"),
    set_device=_unavailable("CUDA"), synchronize=_unavailable("CUDA"),
    manual_seed=lambda seed: None, manual_seed_all=lambda seed: None,
    empty_cache=lambda: None)

accelerator = types.SimpleNamespace(
    is_available=_false, device_count=_zero, current_accelerator=lambda check_available=False: None,
    current_device_index=_unavailable("an accelerator"),
    synchronize=_unavailable("an accelerator"))

mps = types.SimpleNamespace(is_available=_false, is_built=_false, device_count=_zero)

def _opt_einsum_module():
    try:
        import opt_einsum
    except ImportError:
        return None
    return opt_einsum


# torch.backends.opt_einsum: as in PyTorch, einsum with three or more operands contracts along
# the path opt_einsum chooses when that package is installed and this is enabled, else left
# to right (runtime.ops.einsum)
opt_einsum = types.SimpleNamespace(
    is_available=lambda: _opt_einsum_module() is not None,
    get_opt_einsum=_opt_einsum_module, enabled=_opt_einsum_module() is not None,
    strategy="auto" if _opt_einsum_module() is not None else None)

backends = types.SimpleNamespace(
    opt_einsum=opt_einsum,
    mps=types.SimpleNamespace(is_available=_false, is_built=_false),
    cuda=types.SimpleNamespace(is_built=_false),
    cudnn=types.SimpleNamespace(is_available=_false, enabled=False, deterministic=False,
                                benchmark=False))


def set_default_device(dev):
    """Only the CPU (or None, meaning the CPU) can be the default device here."""
    _default_device[0] = device("cpu" if dev is None else dev)


def get_default_device():
    return _default_device[0]
