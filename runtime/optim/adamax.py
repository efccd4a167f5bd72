"""torch.optim.Adamax (Adam with an infinity-norm second moment), in PyTorch's single-tensor
order of operations."""

from runtime import ops as F
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unit, check_unsupported
from runtime.optim._common import new_state, signed_grad


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_nonneg(lr=lr, eps=eps, weight_decay=weight_decay)
        check_unit("beta1", betas[0])
        check_unit("beta2", betas[1])
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        check_unsupported(defaults)
        super().__init__(params, defaults)

    def _update(self, p, group):
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = new_state(p, "exp_avg", "exp_inf")
        step = advance(state)
        grad = signed_grad(p, group)
        beta1, beta2 = group["betas"]
        if group["weight_decay"]:
            grad = F.add(grad, p, alpha=group["weight_decay"])
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.mul_(beta2)
        exp_inf.copy_(F.maximum(exp_inf, F.abs(grad).add_(group["eps"])))
        clr = group["lr"] / (1 - beta1**step)
        p.addcdiv_(exp_avg, exp_inf, value=-clr)
