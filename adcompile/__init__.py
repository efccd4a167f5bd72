"""adcompile: differentiate ordinary Python numerical code, eagerly or compiled.

The eager half is re-exported from `runtime`, so `import adcompile as torch` runs PyTorch
autograd code unchanged.
"""

from runtime import *  # noqa: F401,F403
from runtime import __version__, autograd, dtypes  # noqa: F401
import runtime as _runtime
import sys as _sys

globals().update({k: v for k, v in vars(_runtime).items() if not k.startswith("_")})
_runtime._batching.NAMESPACES.append(_sys.modules[__name__])  # torch.* names batch in vmap

# `import adcompile.nn`, `from adcompile.nn import functional`, `import adcompile.optim` ...
# import the runtime's modules themselves, as `import torch.nn` does for torch.
for _name in ("nn", "nn.functional", "nn.init", "nn.modules", "optim", "autograd",
              "autograd.profiler"):
    _module = _runtime
    for _part in _name.split("."):
        _module = getattr(_module, _part)
    _sys.modules["adcompile." + _name] = _module

from adcompile.api import (  # noqa: E402,F401
    CompiledFunction, adcompile, get_num_threads, grad, hessian, hvp, jacobian, jvp,
    set_num_threads, value_and_grad, vjp)
from adcompile.errors import CompileError, InternalError  # noqa: E402,F401
from adcompile import utils  # noqa: E402,F401

# The compiler's code generators live in the package adcompile.backends, which takes the name
# torch.backends has; it carries torch.backends' namespaces too (opt_einsum, cudnn, mps, cuda)
# so that `torch.backends.opt_einsum.enabled = False` works after `import adcompile as torch`.
from adcompile import backends  # noqa: E402

for _name, _value in vars(_runtime.backends).items():
    setattr(backends, _name, _value)
