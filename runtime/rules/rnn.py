"""The fused LSTM layer: forward kernel on numpy and its derivative rule (backpropagation
through time), one graph node per layer and direction as PyTorch's CPU LSTM records
(MkldnnRnnLayerBackward0: inputs x, w_ih, w_hh, b_ih, b_hh, h0, c0; outputs the hidden
sequence, h_T and c_T).

Per step, with gates in PyTorch's order (input, forget, cell, output):
    pre = x_t w_ih^T + b_ih + h w_hh^T + b_hh;  i, f, o = sigmoid(.), g = tanh(.)
    c' = f * c + i * g;  h' = o * tanh(c')
The forward pass keeps the gate activations, the cells and tanh of the cells; the backward
walks the steps in reverse, then forms the input and weight cotangents with three matmuls
over all steps at once. A reverse-direction layer runs on the time-flipped sequence.

On numpy the rule uses the stored activations. On Tensors (create_graph=True) it recomputes
the layer from its inputs with recorded operations and runs the same recursion on them, so
the gradients can be differentiated again.
"""

import numpy as np

from runtime.rules import rule


def _sigmoid_(v):
    """v <- 1 / (1 + exp(-v)), in place."""
    np.negative(v, out=v)
    np.exp(v, out=v)
    v += 1.0
    np.reciprocal(v, out=v)


# PyTorch stacks the gates as (i, f, g, o); the kernel works on (i, f, o, g) so that the three
# sigmoid gates are one contiguous block
def _gate_order(hidden):
    h = hidden
    return np.r_[0:2 * h, 3 * h:4 * h, 2 * h:3 * h]


def lstm_forward(x, w_ih, w_hh, bias, h0, c0):
    """x (T, B, I) -> (hs (T+1, B, H) with h0 first, cells likewise, tanh of cells (T, B, H),
    gate activations (T, B, 4H) in (i, f, o, g) order)."""
    steps, batch = x.shape[:2]
    hidden = w_hh.shape[1]
    order = _gate_order(hidden)
    xw = np.matmul(x.reshape(steps * batch, -1), w_ih[order].T)
    xw = xw.reshape(steps, batch, 4 * hidden)
    if bias is not None:
        xw += bias[order]
    hs = np.empty((steps + 1, batch, hidden), x.dtype)
    cells = np.empty_like(hs)
    tanh_c = np.empty((steps, batch, hidden), x.dtype)
    hs[0], cells[0] = h0, c0
    w_hh_t = w_hh[order].T
    sig = 3 * hidden
    for t in range(steps):
        gates = xw[t]
        gates += hs[t] @ w_hh_t
        _sigmoid_(gates[:, :sig])
        np.tanh(gates[:, sig:], out=gates[:, sig:])
        c = cells[t + 1]
        np.multiply(gates[:, hidden:2 * hidden], cells[t], out=c)
        c += gates[:, :hidden] * gates[:, sig:]
        np.tanh(c, out=tanh_c[t])
        np.multiply(gates[:, 2 * hidden:sig], tanh_c[t], out=hs[t + 1])
    return hs, cells, tanh_c, xw


def _step_factors(gates, cells, tanh_c):
    """Per-step factors of the gates' cotangents, for all steps at once (few array calls):
    d pre[k] = cell_factor[k] * dc + (output gate) out_factor[k] * dh, with each gate's
    derivative folded in (sigmoid' = s (1 - s), tanh' = 1 - t^2 on the stored activations).
    Returns (cell_factor (T, B, 4, H), out_factor (T, B, H), o * tanh'(c) (T, B, H))."""
    steps, batch, hidden = tanh_c.shape
    g4 = gates.reshape(steps, batch, 4, hidden)
    i, f, o, g = g4[:, :, 0], g4[:, :, 1], g4[:, :, 2], g4[:, :, 3]
    slope = np.empty_like(g4)
    np.multiply(g4[:, :, :3], 1.0 - g4[:, :, :3], out=slope[:, :, :3])
    np.subtract(1.0, g * g, out=slope[:, :, 3])
    cell_factor = np.empty_like(g4)
    np.multiply(g, slope[:, :, 0], out=cell_factor[:, :, 0])
    np.multiply(cells[:-1], slope[:, :, 1], out=cell_factor[:, :, 1])
    cell_factor[:, :, 2] = 0.0
    np.multiply(i, slope[:, :, 3], out=cell_factor[:, :, 3])
    out_factor = tanh_c * slope[:, :, 2]
    return cell_factor, out_factor, o * (1.0 - tanh_c * tanh_c), f


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
    dpre = np.empty((steps, batch, 4, hidden), gates.dtype)
    order = _gate_order(hidden)
    w_hh_p = w_hh[order]
    cell_factor, out_factor, o_slope, forget = _step_factors(gates, cells, tanh_c)
    for k in range(steps - 1, -1, -1):
        if g_out is not None:
            dh = dh + g_out[k]
        dc = dc + dh * o_slope[k]
        np.multiply(cell_factor[k], dc[:, None, :], out=dpre[k])
        np.multiply(dh, out_factor[k], out=dpre[k, :, 2])
        dc = dc * forget[k]
        dh = dpre[k].reshape(batch, -1) @ w_hh_p
    back = np.argsort(order)
    dpre = dpre.reshape(steps * batch, -1)[:, back]
    return _lstm_input_grads(needs, x, w_ih, hs, dpre, dh, dc, has_bias, reverse)


def _lstm_input_grads(needs, x, w_ih, hs, flat, dh0, dc0, has_bias, reverse):
    """flat: the gates' cotangents of all steps, (T * B, 4H) in PyTorch's gate order."""
    steps, batch = x.shape[:2]
    gx = gw_ih = gw_hh = gb = None
    if needs[0]:
        gx = (flat @ w_ih).reshape(x.shape)
        gx = gx[::-1] if reverse else gx
    if needs[1]:
        xs = x[::-1] if reverse else x
        gw_ih = flat.T @ xs.reshape(steps * batch, -1)
    if needs[2]:
        gw_hh = flat.T @ hs[:-1].reshape(steps * batch, -1)
    if has_bias and (needs[3] or needs[4]):
        gb = flat.sum(0)
    gb_ih = gb if needs[3] else None
    gb_hh = None if gb is None or not needs[4] else gb.copy()
    return (gx, gw_ih, gw_hh, gb_ih, gb_hh, dh0 if needs[5] else None, dc0 if needs[6] else None)


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
