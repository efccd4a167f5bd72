"""torch.optim.LBFGS: the two-loop recursion over a history of curvature pairs, in PyTorch's
order of operations, with a fixed step or line_search_fn="strong_wolfe"
(runtime/optim/line_search.py). Like PyTorch, scalars such as y.s, the step length and H_diag
stay float32 0-d tensors, so their rounding matches too.
"""

from runtime import ops as F
from runtime.grad_mode import enable_grad, no_grad
from runtime.optim import Optimizer
from runtime.optim.line_search import StrongWolfe


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if lr < 0:
            raise ValueError(f"invalid lr: {lr} (must be >= 0)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError(f"LBFGS line_search_fn must be None or 'strong_wolfe', got "
                               f"{line_search_fn!r}")
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS supports a single parameter group only")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return F.cat([F.reshape(p._grad, (-1,)) if p._grad is not None
                      else F.zeros_like(F.reshape(p, (-1,))) for p in self._params], 0)

    def _add_grad(self, step, update):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(F.reshape(update[offset:offset + n], p.shape), alpha=float(step))
            offset += n

    def _evaluate(self, closure):
        with enable_grad():
            loss = closure()
        return loss, float(loss.detach())

    def _evaluate_along(self, closure, x, d, t):
        """Loss and flat gradient at x + t*d; the parameters are set back to x after."""
        self._add_grad(t, d)
        _, loss = self._evaluate(closure)
        flat_grad = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    @no_grad()
    def step(self, closure):
        group = self.param_groups[0]
        state = self.state.setdefault(self._params[0], {"func_evals": 0, "n_iter": 0})
        orig_loss, loss = self._evaluate(closure)
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(F.abs(flat_grad).max()) <= group["tolerance_grad"]:
            return orig_loss
        run = _Run(self, group, state, flat_grad, loss)
        run.iterate(closure)
        run.save()
        return orig_loss


class _Run:
    """One call of LBFGS.step: the iteration state, loaded from and saved to `state`."""

    _KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")

    def __init__(self, opt, group, state, flat_grad, loss):
        self.opt, self.group, self.state = opt, group, state
        self.flat_grad, self.loss, self.evals = flat_grad, loss, 1
        for key in self._KEYS:
            setattr(self, key, state.get(key))

    def save(self):
        for key in self._KEYS:
            self.state[key] = getattr(self, key)

    def _direction(self):
        if self.state["n_iter"] == 1:
            self.old_dirs, self.old_stps, self.ro, self.H_diag = [], [], [], 1
            return F.neg(self.flat_grad)
        self._remember(F.sub(self.flat_grad, self.prev_flat_grad), F.mul(self.d, self.t))
        al = [None] * len(self.old_dirs)
        q = F.neg(self.flat_grad)
        for i in range(len(self.old_dirs) - 1, -1, -1):
            al[i] = F.mul(F.dot(self.old_stps[i], q), self.ro[i])
            q.add_(self.old_dirs[i], alpha=-float(al[i]))
        r = F.mul(q, self.H_diag)
        for i in range(len(self.old_dirs)):
            be_i = F.mul(F.dot(self.old_dirs[i], r), self.ro[i])
            r.add_(self.old_stps[i], alpha=float(F.sub(al[i], be_i)))
        return r

    def _remember(self, y, s):
        ys = F.dot(y, s)
        if float(ys) <= 1e-10:
            return
        if len(self.old_dirs) == self.group["history_size"]:
            for history in (self.old_dirs, self.old_stps, self.ro):
                history.pop(0)
        self.old_dirs.append(y)
        self.old_stps.append(s)
        self.ro.append(F.reciprocal(ys))
        self.H_diag = F.div(ys, F.dot(y, y))

    def _first_step(self):
        if self.state["n_iter"] != 1:
            return self.group["lr"]
        inv = F.reciprocal(F.sum(F.abs(self.flat_grad)))
        return (1.0 if 1.0 <= float(inv) else inv) * self.group["lr"]

    def iterate(self, closure):
        g = self.group
        for n_iter in range(1, g["max_iter"] + 1):
            self.state["n_iter"] += 1
            self.d = self._direction()
            self.prev_flat_grad = F.clone(self.flat_grad)
            self.prev_loss = self.loss
            self.t = self._first_step()
            gtd = F.dot(self.flat_grad, self.d)
            if float(gtd) > -g["tolerance_change"]:
                return
            if g["line_search_fn"] is not None:
                self._line_search(closure, gtd)
            else:
                self.opt._add_grad(self.t, self.d)
                if n_iter == g["max_iter"]:
                    return
                _, self.loss = self.opt._evaluate(closure)
                self.flat_grad = self.opt._flat_grad()
                self.evals += 1
                self.state["func_evals"] += 1
            if n_iter == g["max_iter"] or self._converged():
                return

    def _line_search(self, closure, gtd):
        """Move to the strong-Wolfe step along d; the loss and gradient there are kept."""
        x = [F.clone(p) for p in self.opt._params]
        search = StrongWolfe(lambda t: self.opt._evaluate_along(closure, x, self.d, t), self.d,
                             self.loss, self.flat_grad, gtd,
                             max_ls=self.group["max_eval"] - self.evals)
        self.loss, self.flat_grad, self.t, evals = search.run(self.t)
        self.opt._add_grad(self.t, self.d)
        self.evals += evals
        self.state["func_evals"] += evals

    def _converged(self):
        g = self.group
        return (self.evals >= g["max_eval"]
                or float(F.abs(self.flat_grad).max()) <= g["tolerance_grad"]
                or float(F.abs(F.mul(self.d, self.t)).max()) <= g["tolerance_change"]
                or abs(self.loss - self.prev_loss) < g["tolerance_change"])
