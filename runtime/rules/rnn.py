"""The fused LSTM layer: forward kernel on numpy and its derivative rule (backpropagation
through time), one graph node per layer and direction as PyTorch's CPU LSTM records
(MkldnnRnnLayerBackward0: inputs x, w_ih, w_hh, b_ih, b_hh, h0, c0; outputs the hidden
sequence, h_T and c_T).

On numpy, float32 follows oneDNN's `ref` RNN (PyTorch's kernel) operation by operation, so
the outputs and every gradient are bit-equal to PyTorch's single-threaded ones:
forward, per step, gates in PyTorch's order (input, forget, cell, output):
    pre = (x_t w_ih^T + h w_hh^T) + (b_ih + b_hh)   (x w_ih^T for all steps at once)
    i, f, o = sigmoid(.), g = tanh(.)   (runtime/dnnl_eltwise.py)
    c' = fma(i, g, c * f);  h' = o * tanh(c')
backward, per step from the last (s' = fma(-s, s, s) for a sigmoid gate, fma(-t, t, 1) for a
tanh), then three products over all steps:
    dh = d out_t + dh';  dc = dc' + (tanh'(c') dh) o
    d pre = ((o' dh) tanh c', (i' dc) g, (f' dc) c, g' (i dc));  dc' = dc f;  dh' = d pre w_hh
    d x = d pre w_ih;  d w_ih = d pre^T x;  d w_hh = d pre[1:]^T h[1:-1] + d pre[0]^T h0
    (a reverse layer: one product d pre^T h[:-1])
    d b = every step's rows added in turn, last step first
Every product is a chain of fused multiply-adds in k order (numpy_ops.matmul). A
reverse-direction layer runs on the time-flipped sequence.

On Tensors (create_graph=True) the rule recomputes the layer from its inputs with recorded
operations and runs the same recursion on them, so the gradients can be differentiated again.
"""

import numpy as np

from runtime import dnnl_eltwise
from runtime.fma import fma
from runtime.rules import numpy_ops, rule

F32 = np.float32


def _product(a, b):
    """a @ b with each output one chain of fused multiply-adds in k order, as oneDNN's gemm
    adds it, also for a single row (numpy_ops.matmul leaves one row to BLAS's gemv, whose
    order differs): the row is doubled and one copy kept."""
    if a.shape[0] == 1:
        return numpy_ops.matmul(np.concatenate([a, a]), b)[:1]
    return numpy_ops.matmul(a, b)


def _recurrent_product(w_hh, batch):
    """(x_proj, h) -> x_proj + h w_hh^T as oneDNN adds it: the product's chains from zero,
    then added; for a batch of one (its gemv) the chain starts from x_proj itself, done here
    as one chain over [1, h] and [x_proj; w_hh^T]."""
    if batch > 1:
        w_hh_t = w_hh.T
        return lambda x_proj, h: x_proj + _product(h, w_hh_t)
    stacked = np.empty((w_hh.shape[1] + 1, w_hh.shape[0]), w_hh.dtype)
    stacked[1:] = w_hh.T
    row = np.ones((1, w_hh.shape[1] + 1), w_hh.dtype)

    def gemv(x_proj, h):
        stacked[0], row[0, 1:] = x_proj[0], h[0]
        return _product(row, stacked)

    return gemv


def lstm_forward(x, w_ih, w_hh, bias, h0, c0):
    """x (T, B, I) -> (hs (T+1, B, H) with h0 first, cells likewise, tanh of cells (T, B, H),
    gate activations (T, B, 4H) in PyTorch's order)."""
    steps, batch = x.shape[:2]
    hidden = w_hh.shape[1]
    gates = _product(x.reshape(steps * batch, -1), w_ih.T)
    gates = gates.reshape(steps, batch, 4 * hidden)
    hs = np.empty((steps + 1, batch, hidden), x.dtype)
    cells = np.empty_like(hs)
    tanh_c = np.empty((steps, batch, hidden), x.dtype)
    hs[0], cells[0] = h0, c0
    recurrent = _recurrent_product(w_hh, batch)
    cell_gate = slice(2 * hidden, 3 * hidden)
    for t in range(steps):
        pre = recurrent(gates[t], hs[t])
        if bias is not None:
            pre += bias
        act = gates[t]
        act[...] = dnnl_eltwise.sigmoid(pre)
        act[:, cell_gate] = dnnl_eltwise.tanh(pre[:, cell_gate])
        i, f, g, o = (act[:, k * hidden:(k + 1) * hidden] for k in range(4))
        cells[t + 1] = fma(i, g, cells[t] * f)
        tanh_c[t] = dnnl_eltwise.tanh(cells[t + 1])
        np.multiply(o, tanh_c[t], out=hs[t + 1])
    return hs, cells, tanh_c, gates


def _slopes(gates, tanh_c):
    """Derivatives of the activations on their outputs, all steps at once: s - s^2 for the
    sigmoid gates and 1 - t^2 for the tanh ones, each one fused multiply-add."""
    hidden = tanh_c.shape[-1]
    slope = fma(-gates, gates, gates)
    cell_gate = slice(2 * hidden, 3 * hidden)
    g = gates[..., cell_gate]
    slope[..., cell_gate] = fma(-g, g, F32(1))
    return slope, fma(-tanh_c, tanh_c, F32(1))


@rule("lstm_layer")
def lstm_layer(ops, g, needs, x, w_ih, w_hh, b_ih, b_hh, h0, c0, acts, reverse):
    """Cotangents of (x, w_ih, w_hh, b_ih, b_hh, h0, c0) from those of (out, h_T, c_T)."""
    has_bias = b_ih is not None
    if ops.__name__ != "runtime.rules.numpy_ops":
        return _lstm_on_tensors(ops, g, needs, (x, w_ih, w_hh, b_ih, b_hh, h0, c0), reverse)
    hs, cells, tanh_c, gates = acts
    g_out, g_h, g_c = g
    steps, batch, hidden = tanh_c.shape
    if g_out is not None and reverse:
        g_out = g_out[::-1]
    dh = np.zeros((batch, hidden), hs.dtype) if g_h is None else g_h
    dc = np.zeros((batch, hidden), hs.dtype) if g_c is None else g_c
    dpre = np.empty((steps, batch, 4 * hidden), gates.dtype)
    slope, tanh_slope = _slopes(gates, tanh_c)
    for k in range(steps - 1, -1, -1):
        dh = dh if g_out is None else g_out[k] + dh
        dc = _cell_step(dpre[k], dh, dc, gates[k], slope[k], tanh_slope[k], tanh_c[k],
                        cells[k])
        dh = _product(dpre[k], w_hh)
    flat = dpre.reshape(steps * batch, -1)
    return _lstm_input_grads(needs, x, w_ih, hs, flat, dh, dc, has_bias, reverse)


def _cell_step(dpre, dh, dc, gates, slope, tanh_slope, tanh_c, c_prev):
    """One step of the recursion: fills dpre (B, 4H), returns the cell's cotangent before it."""
    hidden = dh.shape[-1]
    i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    di, df, dg, do = (slope[:, k * hidden:(k + 1) * hidden] for k in range(4))
    dc = dc + tanh_slope * dh * o
    np.multiply(do * dh, tanh_c, out=dpre[:, 3 * hidden:])
    np.multiply(di * dc, g, out=dpre[:, :hidden])
    np.multiply(df * dc, c_prev, out=dpre[:, hidden:2 * hidden])
    np.multiply(dg, i * dc, out=dpre[:, 2 * hidden:3 * hidden])
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
