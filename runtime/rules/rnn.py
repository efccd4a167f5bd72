"""The fused LSTM layer: forward kernel on numpy and its derivative rule (backpropagation
through time), one graph node per layer and direction as PyTorch's CPU LSTM records
(MkldnnRnnLayerBackward0: inputs x, w_ih, w_hh, b_ih, b_hh, h0, c0; outputs the hidden
sequence, h_T and c_T).

On numpy, float32 follows oneDNN's `ref` RNN (PyTorch's kernel) operation by operation, so
the outputs and every gradient are bit-equal to PyTorch's single-threaded ones:
forward, per step, gates in PyTorch's order (input, forget, cell, output):
    pre = (x_t w_ih^T + h w_hh^T) + (b_ih + b_hh)   (x w_ih^T for all steps at once)
    i, f, o = sigmoid(.), g = tanh(.)   (runtime/dnnl_eltwise.py; gates kept as i, f, o, g)
    c' = fma(i, g, c * f);  h' = o * tanh(c')
backward, per step from the last (s' = fma(-s, s, s) for a sigmoid gate, fma(-t, t, 1) for a
tanh), then three products over all steps:
    dh = d out_t + dh';  dc = dc' + (tanh'(c') dh) o
    d pre = ((o' dh) tanh c', (i' dc) g, (f' dc) c, g' (i dc));  dc' = dc f;  dh' = d pre w_hh
    d x = d pre w_ih;  d w_ih = d pre^T x;  d w_hh = d pre[1:]^T h[1:-1] + d pre[0]^T h0
    (a reverse layer: one product d pre^T h[:-1])
    d b = every step's rows added in turn, last step first
Every product is a chain of fused multiply-adds in k order (numpy_ops.blocked_matmul). A
reverse-direction layer runs on the time-flipped sequence. Each step's element-wise work
(activations and cell update; the backward's gate cotangents) runs compiled where llvmlite
is (runtime/simd_compiled.py: the same operations, one loop), else as the numpy lines here.

On Tensors (create_graph=True) the rule recomputes the layer from its inputs with recorded
operations and runs the same recursion on them, so the gradients can be differentiated again.
"""

import numpy as np

from runtime import dnnl_eltwise, simd_compiled
from runtime.fma import fma, horner
from runtime.rules import numpy_ops, rule

F32 = np.float32


def _product(a, b):
    """a @ b with each output one chain of fused multiply-adds in k order, as oneDNN's gemm
    adds it, also for a single row or column (which it leaves to BLAS's gemv, whose order
    differs): that row or column is doubled and one copy kept. Past MKL_K_BLOCK terms the
    chains run in numpy_ops.k_blocks' blocks, added in order: oneDNN's own gemm cuts k so
    on both hosts measured (an Intel Xeon and an AMD EPYC, both with AVX-512), MKL's gemm
    (numpy_ops.matmul with MKL) on the Xeon only, so MKL is not called here."""
    if a.shape[0] == 1:
        return _product(np.concatenate([a, a]), b)[:1]
    if b.shape[1] == 1:
        return _product(a, np.concatenate([b, b], 1))[:, :1]
    return numpy_ops.blocked_matmul(np.asfortranarray(a), b)


# the kernel keeps the gates as (input, forget, output, cell), so that the sigmoid gates are
# one block; each output's product is the same chain whatever the order of the outputs
_SIGMOID_FIRST = (0, 1, 3, 2)


def _kernel_order(w, hidden):
    return np.concatenate([w[k * hidden:(k + 1) * hidden] for k in _SIGMOID_FIRST])


def _recurrent_step(w_hh, batch):
    """(x_proj, h) -> x_proj + w_hh h on the step's columns (4H, B) and (H, B), as oneDNN
    adds it: the product's chains from zero, then added; for a batch of one (its gemv) the
    chain starts from x_proj itself, done here as one chain over [x_proj, w_hh] and [1; h]."""
    if batch > 1:
        w_hh = np.asfortranarray(w_hh)
        return lambda x_proj, h: x_proj + _product(w_hh, h)
    stacked = np.empty((w_hh.shape[0], w_hh.shape[1] + 1), w_hh.dtype, order="F")
    stacked[:, 1:] = w_hh
    column = np.ones((w_hh.shape[1] + 1, 1), w_hh.dtype)

    def gemv(x_proj, h):
        stacked[:, :1], column[1:] = x_proj, h
        return _product(stacked, column)

    return gemv


def lstm_forward(x, w_ih, w_hh, bias, h0, c0):
    """x (T, B, I) -> (hs (T+1, H, B) with h0 first, cells likewise, tanh of cells (T, H, B),
    gate activations (T, 4H, B) in the order (input, forget, output, cell)).

    The steps run on columns, features by batch, so that each gate's block and each state is
    contiguous for the element-wise work (`by_batch` turns them back)."""
    steps, batch = x.shape[:2]
    hidden = w_hh.shape[1]
    projected = _product(_kernel_order(w_ih, hidden), x.reshape(steps * batch, -1).T)
    gates = np.ascontiguousarray(projected.reshape(4 * hidden, steps, batch).transpose(1, 0, 2))
    hs = np.empty((steps + 1, hidden, batch), x.dtype)
    cells = np.empty_like(hs)
    tanh_c = np.empty((steps, hidden, batch), x.dtype)
    hs[0], cells[0] = h0.T, c0.T
    recurrent = _recurrent_step(_kernel_order(w_hh, hidden), batch)
    bias = None if bias is None else _kernel_order(bias, hidden)[:, None]
    pre = np.empty((4 * hidden, batch), x.dtype)
    flat_bias = None if bias is None else bias.reshape(-1)
    compiled = simd_compiled.lstm_steps(pre, flat_bias, cells, gates, tanh_c, hs)
    step = CellStep(hidden, batch) if compiled is None else None
    for t in range(steps):
        np.copyto(pre, recurrent(gates[t], hs[t]))
        if compiled is not None:  # the same bits as CellStep's numpy lines, compiled
            compiled(t)
        else:
            step(pre, bias, cells[t], gates[t], cells[t + 1], tanh_c[t], hs[t + 1])
    return hs, cells, tanh_c, gates


class CellStep:
    """A step's element-wise work on columns, the reference for simd_compiled.lstm_steps:
    gates = activations of pre + bias (bias (4H, 1) or None), c_next = fma(i, g, c f),
    tanh_c = tanh(c_next), h_next = o tanh_c."""

    def __init__(self, hidden, batch):
        self.activate = dnnl_eltwise.LstmGates(hidden, batch)
        self.tanh = dnnl_eltwise.Tanh((hidden, batch))
        self.shape = (4, hidden, batch)

    def __call__(self, pre, bias, c_prev, gates, c_next, tanh_c, h_next):
        if bias is not None:
            pre += bias
        self.activate(pre, gates)
        i, f, o, g = gates.reshape(self.shape)
        c_next[...] = horner([i, c_prev * f], g)  # fma(i, g, c f)
        tanh_c[...] = self.tanh(c_next)
        np.multiply(o, tanh_c, out=h_next)


def by_batch(columns):
    """A column-layout array (..., features, B) as (..., B, features), C-contiguous."""
    return np.ascontiguousarray(np.swapaxes(columns, -1, -2))


def _slopes(gates, tanh_c):
    """Derivatives of the activations on their outputs, all steps at once: s - s^2 for the
    sigmoid gates and 1 - t^2 for the tanh ones, each one fused multiply-add."""
    split = 3 * tanh_c.shape[1]
    addend = gates.copy()
    addend[:, split:] = 1
    return horner([-gates, addend], gates), horner([-tanh_c, F32(1)], tanh_c)


@rule("lstm_layer")
def lstm_layer(ops, g, needs, x, w_ih, w_hh, b_ih, b_hh, h0, c0, acts, reverse):
    """Cotangents of (x, w_ih, w_hh, b_ih, b_hh, h0, c0) from those of (out, h_T, c_T)."""
    has_bias = b_ih is not None
    if ops.__name__ != "runtime.rules.numpy_ops":
        return _lstm_on_tensors(ops, g, needs, (x, w_ih, w_hh, b_ih, b_hh, h0, c0), reverse)
    hs, cells, tanh_c, gates = acts  # columns, as lstm_forward leaves them
    g_out, g_h, g_c = g
    steps, hidden, batch = tanh_c.shape
    if g_out is not None:
        g_out = by_batch(g_out[::-1] if reverse else g_out)
    dh = np.zeros((hidden, batch), hs.dtype) if g_h is None else g_h.T
    dc = np.zeros((hidden, batch), hs.dtype) if g_c is None else g_c.T
    dpre = np.empty((steps, 4 * hidden, batch), gates.dtype)
    slope, tanh_slope = _slopes(gates, tanh_c)
    w_hh_t = w_hh.T
    dh, dc = np.array(dh, order="C"), np.array(dc, order="C")  # buffers, rewritten each step
    compiled = simd_compiled.lstm_steps_back(dh, g_out, dc, gates, slope, tanh_slope, tanh_c,
                                             cells, dpre)
    for k in range(steps - 1, -1, -1):
        if compiled is not None:  # the same bits as _cell_step_numpy, compiled
            compiled(k)
        else:
            step_dh = dh if g_out is None else g_out[k] + dh
            dc[...] = _cell_step_numpy(dpre[k], step_dh, dc, gates[k], slope[k],
                                       tanh_slope[k], tanh_c[k], cells[k])
        np.copyto(dh, _product(w_hh_t, dpre[k]))
    flat = by_batch(dpre).reshape(steps * batch, -1)
    return _lstm_input_grads(needs, x, w_ih, by_batch(hs), flat, by_batch(dh), by_batch(dc),
                             has_bias, reverse)


def _cell_step_numpy(dpre, dh, dc, gates, slope, tanh_slope, tanh_c, c_prev):
    """Fills dpre (4H, B, PyTorch's gate order) from the kernel's gates (input, forget,
    output, cell), returns the cell's cotangent before the step."""
    i, f, o, g = gates.reshape(4, -1, gates.shape[-1])
    di, df, do, dg = slope.reshape(4, -1, slope.shape[-1])
    d_i, d_f, d_g, d_o = dpre.reshape(4, -1, dpre.shape[-1])
    dc = dc + tanh_slope * dh * o
    np.multiply(do * dh, tanh_c, out=d_o)
    np.multiply(di * dc, g, out=d_i)
    np.multiply(df * dc, c_prev, out=d_f)
    np.multiply(dg, i * dc, out=d_g)
    return dc * f


def _lstm_input_grads(needs, x, w_ih, hs, flat, dh0, dc0, has_bias, reverse):
    """flat: the gates' cotangents of all steps, (T * B, 4H) in PyTorch's gate order."""
    steps, batch = x.shape[:2]
    gx = gw_ih = gw_hh = gb = None
    if needs[0]:
        gx = _product(flat, w_ih).reshape(x.shape)
        gx = gx[::-1] if reverse else gx
    if needs[1]:
        xs = x[::-1] if reverse else x
        gw_ih = _product(flat.T, xs.reshape(steps * batch, -1))
    if needs[2]:
        gw_hh = _recurrent_weight_grad(flat, hs, batch, reverse)
    if has_bias and (needs[3] or needs[4]):
        last_first = flat.reshape(steps, batch, -1)[::-1].reshape(steps * batch, -1)
        gb = np.add.reduce(last_first, axis=0, initial=F32(0))
    gb_ih = gb if needs[3] else None
    gb_hh = None if gb is None or not needs[4] else gb.copy()
    return (gx, gw_ih, gw_hh, gb_ih, gb_hh, dh0 if needs[5] else None, dc0 if needs[6] else None)


def _recurrent_weight_grad(flat, hs, batch, reverse):
    """d w_hh = d pre^T h_prev over all steps. oneDNN reads a forward layer's h0 from the
    caller's memory and its other states from its workspace: two products, added; a reverse
    layer's h0 is copied into the workspace first, so one product over all steps."""
    hidden = hs.shape[-1]
    if reverse or len(hs) == 2:
        return _product(flat.T, hs[:-1].reshape(-1, hidden))
    return _product(flat[:batch].T, hs[0]) + _product(flat[batch:].T,
                                                      hs[1:-1].reshape(-1, hidden))


def _tanh(ops, v):
    return ops.sub(ops.mul(ops.sigmoid(ops.mul(v, 2.0)), 2.0), 1.0)


def _lstm_steps_on_tensors(ops, xs, w_ih, w_hh, b_ih, b_hh, h, c):
    """The layer's forward pass as recorded operations: per step (i, f, g, o, c_prev,
    tanh c) and the final (h, c)."""
    hidden = ops.shape(w_hh)[1]
    steps = []
    for xt in xs:
        pre = ops.add(ops.matmul(xt, ops.mT(w_ih)), ops.matmul(h, ops.mT(w_hh)))
        if b_ih is not None:
            pre = ops.add(ops.add(pre, b_ih), b_hh)
        i, f, g, o = (ops.narrow(pre, 1, k * hidden, hidden) for k in range(4))
        i, f, o, g = ops.sigmoid(i), ops.sigmoid(f), ops.sigmoid(o), _tanh(ops, g)
        c_new = ops.add(ops.mul(f, c), ops.mul(i, g))
        th = _tanh(ops, c_new)
        steps.append((i, f, g, o, c, th, h))
        h, c = ops.mul(o, th), c_new
    return steps


def _lstm_on_tensors(ops, g, needs, inputs, reverse):
    """The rule on Tensors: recompute, then backpropagate through time with recorded ops."""
    x, w_ih, w_hh, b_ih, b_hh, h0, c0 = inputs
    count = ops.shape(x)[0]
    order = range(count - 1, -1, -1) if reverse else range(count)
    xs = [ops.select(x, 0, t) for t in order]
    steps = _lstm_steps_on_tensors(ops, xs, w_ih, w_hh, b_ih, b_hh, h0, c0)
    g_out, dh, dc = g
    dpres = [None] * count
    for k in range(count - 1, -1, -1):
        i, f, gg, o, c_prev, th, h_prev = steps[k]
        if g_out is not None:
            step_g = ops.select(g_out, 0, count - 1 - k if reverse else k)
            dh = step_g if dh is None else ops.add(dh, step_g)
        dh = ops.zeros_like(th) if dh is None else dh
        one_minus_th2 = ops.rsub(ops.mul(th, th), 1.0)
        dc_k = ops.mul(ops.mul(dh, o), one_minus_th2)
        dc = dc_k if dc is None else ops.add(dc, dc_k)
        dpres[k] = ops.cat([ops.mul(ops.mul(dc, gg), ops.mul(i, ops.rsub(i, 1.0))),
                            ops.mul(ops.mul(dc, c_prev), ops.mul(f, ops.rsub(f, 1.0))),
                            ops.mul(ops.mul(dc, i), ops.rsub(ops.mul(gg, gg), 1.0)),
                            ops.mul(ops.mul(dh, th), ops.mul(o, ops.rsub(o, 1.0)))], 1)
        dc = ops.mul(dc, f)
        dh = ops.matmul(dpres[k], w_hh)
    return _tensor_input_grads(ops, needs, xs, steps, dpres, dh, dc, w_ih, b_ih, reverse)


def _tensor_input_grads(ops, needs, xs, steps, dpres, dh0, dc0, w_ih, b_ih, reverse):
    dpre = ops.stack(dpres, 0)
    gx = gw_ih = gw_hh = gb = None
    if needs[0]:
        gx = ops.matmul(dpre, w_ih)
        gx = ops.flip(gx, 0) if reverse else gx
    if needs[1]:
        gw_ih = ops.sum_dim(ops.matmul(ops.mT(dpre), ops.stack(xs, 0)), 0, False)
    if needs[2]:
        h_prev = ops.stack([s[6] for s in steps], 0)
        gw_hh = ops.sum_dim(ops.matmul(ops.mT(dpre), h_prev), 0, False)
    if b_ih is not None and (needs[3] or needs[4]):
        gb = ops.sum_dim(ops.sum_dim(dpre, 0, False), 0, False)
    return (gx, gw_ih, gw_hh, gb if needs[3] else None, gb if needs[4] else None,
            dh0 if needs[5] else None, dc0 if needs[6] else None)
