"""torch.optim.RAdam (Adam with a variance-rectified step), in PyTorch's single-tensor order
of operations: plain momentum steps until the rectification term is defined (rho_t > 5)."""

from runtime import ops as F
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unit, check_unsupported
from runtime.optim._common import new_state, signed_grad


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_nonneg(lr=lr, eps=eps, weight_decay=weight_decay)
        check_unit("beta1", betas[0])
        check_unit("beta2", betas[1])
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        check_unsupported(defaults)
        super().__init__(params, defaults)

    def _update(self, p, group):
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = new_state(p, "exp_avg", "exp_avg_sq")
        step = advance(state)
        grad = signed_grad(p, group)
        beta1, beta2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        if wd and group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        elif wd:
            grad = F.add(grad, p, alpha=wd)
        state["exp_avg"].lerp_(grad, 1 - beta1)
        state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        correction2 = 1 - beta2**step
        corrected = F.div(state["exp_avg"], 1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / correction2
        if rho_t <= 5.0:
            p.add_(F.mul(corrected, lr), alpha=-1.0)
            return
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        # a float over a tensor is reciprocal-then-multiply in PyTorch; the rounding follows it
        denom = F.sqrt(state["exp_avg_sq"]).add_(group["eps"])
        adaptive = F.mul(F.reciprocal(denom), correction2**0.5)
        p.add_(F.mul(F.mul(F.mul(corrected, lr), adaptive), rect**0.5), alpha=-1.0)
