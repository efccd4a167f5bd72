"""gradcheck / gradgradcheck: compare autograd's Jacobians with central finite differences.

The analytical Jacobian is built one row at a time (a unit cotangent per output element) with
`autograd.grad`; the numerical one perturbs each input element by +-eps in place. Inputs should
be float64: in float32 the finite differences are too coarse to mean much.
"""

import warnings

import numpy as np

from runtime import autograd
from runtime.grad_mode import enable_grad, no_grad
from runtime.ops._core import is_tensor, wrap


class GradcheckError(RuntimeError):
    """Raised by gradcheck when autograd's gradient disagrees with finite differences."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _checked(inputs):
    return [i for i, t in enumerate(inputs) if is_tensor(t) and t.requires_grad]


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if is_tensor(o)]


def numerical_jacobian(func, inputs, i, eps):
    """d outputs / d inputs[i] as one matrix per output, by central differences."""
    data = inputs[i]._data
    columns = []
    for k in range(data.size):
        index = np.unravel_index(k, data.shape)
        orig = data[index].item()
        columns.append(_difference(func, inputs, data, index, orig, eps))
    with no_grad():
        sizes = [o._data.size for o in _outputs(func, inputs)]
    return [np.stack([c[j] for c in columns], axis=1) if columns else np.zeros((size, 0))
            for j, size in enumerate(sizes)]


def _difference(func, inputs, data, index, orig, eps):
    with no_grad():
        data[index] = orig + eps
        plus = [o._data.astype(np.float64).ravel() for o in _outputs(func, inputs)]
        data[index] = orig - eps
        minus = [o._data.astype(np.float64).ravel() for o in _outputs(func, inputs)]
        data[index] = orig
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def analytical_jacobian(outputs, inputs, i):
    """d outputs / d inputs[i] from autograd, one row per output element."""
    x = inputs[i]
    jac = []
    for out in outputs:
        rows = []
        for k in range(out._data.size):
            cot = np.zeros(out._data.shape, out._dtype.np)
            cot.reshape(-1)[k] = 1
            if not out.requires_grad:
                rows.append(np.zeros(x._data.size))
                continue
            (g,) = autograd.grad(out, x, wrap(cot, out._dtype), retain_graph=True,
                                 allow_unused=True)
            rows.append(np.zeros(x._data.size) if g is None else
                        g._data.astype(np.float64).ravel())
        jac.append(np.array(rows).reshape(out._data.size, x._data.size))
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False, **_ignored):
    """True when autograd's Jacobian matches finite differences for every checked input."""
    inputs = _as_tuple(inputs)
    checked = _checked(inputs)
    for i in checked:
        if inputs[i]._dtype.name != "float64":
            warnings.warn(f"gradcheck: input {i} is {inputs[i]._dtype}, not float64; finite "
                          f"differences in lower precision are unreliable", UserWarning,
                          stacklevel=2)
    outputs = _outputs(func, inputs)
    for i in checked:
        analytical = analytical_jacobian(outputs, inputs, i)
        again = analytical_jacobian(outputs, inputs, i)
        for j, (a, b) in enumerate(zip(analytical, again)):
            if np.max(np.abs(a - b), initial=0.0) > nondet_tol:
                return _fail(raise_exception, f"backward is not reentrant: two runs of the "
                                              f"gradient of output {j} w.r.t. input {i} differ")
        numerical = numerical_jacobian(func, inputs, i, eps)
        for j, (a, n) in enumerate(zip(analytical, numerical)):
            bad = np.abs(a - n) > atol + rtol * np.abs(n)
            if bad.any():
                return _fail(raise_exception, _mismatch(i, j, a, n, bad))
    return True


def _mismatch(i, j, analytical, numerical, bad):
    row, col = (int(v) for v in np.argwhere(bad)[0])
    return (f"gradcheck: the gradient of output {j} with respect to input {i} does not match "
            f"finite differences. First mismatch at (output element {row}, input element "
            f"{col}): numerical {numerical[row, col]:.8g}, analytical "
            f"{analytical[row, col]:.8g}.\nnumerical Jacobian:\n{numerical}\n"
            f"analytical Jacobian:\n{analytical}")


def _fail(raise_exception, message):
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **_ignored):
    """gradcheck of the first derivative: checks second-order gradients."""
    from runtime.creation import tensor

    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(tensor(rng.standard_normal(o._data.shape), requires_grad=True)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)
    checked = _checked(inputs)

    def first_derivative(*args):
        # finite differences call this under no_grad; the derivative itself needs a graph
        with enable_grad():
            xs, gos = args[:n], args[n:]
            outs = [o for o in _outputs(func, xs) if o.requires_grad]
            diff = [xs[i] for i in checked]
            grads = autograd.grad(outs, diff, gos[: len(outs)], create_graph=True,
                                  allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
