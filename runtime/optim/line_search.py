"""The strong-Wolfe line search of LBFGS(line_search_fn="strong_wolfe").

A bracketing phase grows the step until the Wolfe conditions hold or a bracket containing a
minimiser is found; a zoom phase then shrinks the bracket by safeguarded cubic
interpolation. Scalars keep PyTorch's types: the loss values are Python floats, directional
derivatives (g.d) are float32 0-d tensors, and the step is a Python number or a 0-d tensor,
so mixed arithmetic rounds in float32 exactly where PyTorch's does.

`evaluate(t)` returns (loss, flat_grad) at x + t*d and restores x.
"""

from runtime import ops as F


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to bounds
    (by default the interval between x1 and x2); the midpoint when the cubic has none."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if not d2_square >= 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


class _Point:
    """A trial step with its loss, gradient and directional derivative."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


class StrongWolfe:
    """One line search from x along d, starting at step t (PyTorch's constants)."""

    def __init__(self, evaluate, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                 max_ls=25):
        self.evaluate, self.d = evaluate, d
        self.f, self.gtd, self.g = f, gtd, F.clone(g)
        self.c1, self.c2, self.tolerance_change, self.max_ls = c1, c2, tolerance_change, max_ls
        self.evals = self.iters = 0
        self.done = False

    def _trial(self, t):
        f_new, g_new = self.evaluate(t)
        self.evals += 1
        return _Point(t, f_new, g_new, F.dot(g_new, self.d))

    def _sufficient_decrease_fails(self, p):
        return p.f > (self.f + self.c1 * p.t * self.gtd)

    def _curvature_holds(self, p):
        return abs(p.gtd) <= -self.c2 * self.gtd

    def run(self, t):
        """(loss, flat_grad, step, evaluations) at the accepted step."""
        d_norm = F.abs(self.d).max()
        bracket = self._bracket(t)
        low = self._zoom(bracket, d_norm)
        return low.f, low.g, low.t, self.evals

    def _bracket(self, t):
        """Grow the step until it is acceptable (a one-point bracket, done) or a minimiser
        is enclosed (a two-point bracket)."""
        prev = _Point(0, self.f, self.g, self.gtd)
        new = self._trial(t)
        while self.iters < self.max_ls:
            if self._sufficient_decrease_fails(new) or (self.iters > 1 and new.f >= prev.f):
                return [prev, _copy(new)]
            if self._curvature_holds(new):
                self.done = True
                return [new]
            if new.gtd >= 0:
                return [prev, _copy(new)]
            bounds = (new.t + 0.01 * (new.t - prev.t), new.t * 10)
            step = cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd, bounds)
            prev = _copy(new)
            new = self._trial(step)
            self.iters += 1
        return [_Point(0, self.f, self.g, None), new]

    def _zoom(self, bracket, d_norm):
        """Shrink a two-point bracket by safeguarded cubic steps; the low end is returned."""
        low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
        insufficient = False
        while not self.done and self.iters < self.max_ls:
            if abs(bracket[1].t - bracket[0].t) * d_norm < self.tolerance_change:
                break
            t, insufficient = self._safeguarded_step(bracket, insufficient)
            new = self._trial(t)
            self.iters += 1
            if self._sufficient_decrease_fails(new) or new.f >= bracket[low].f:
                bracket[high] = _copy(new)
                low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
                continue
            if self._curvature_holds(new):
                self.done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = _copy(new)
        return bracket[low]

    @staticmethod
    def _safeguarded_step(bracket, insufficient):
        """The cubic's minimiser, moved away from the bracket's ends when it lands within
        10% of them twice running (or outside)."""
        a, b = bracket
        t = cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        eps = 0.1 * (top - bottom)
        if not min(top - t, t - bottom) < eps:
            return t, False
        if insufficient or t >= top or t <= bottom:
            t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
            return t, False
        return t, True


def _copy(p):
    return _Point(p.t, p.f, F.clone(p.g), p.gtd)
