"""torch.optim.NAdam (Adam with Nesterov momentum and a momentum-decay schedule), in
PyTorch's single-tensor order of operations. The running product of the momentum
coefficients is a float32 0-d tensor in PyTorch, so it is rounded to float32 here too."""

import numpy as np

from runtime import ops as F
from runtime.ops._core import wrap
from runtime import dtypes
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unit, check_unsupported
from runtime.optim._common import new_state, signed_grad


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_nonneg(lr=lr, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay)
        check_unit("beta1", betas[0])
        check_unit("beta2", betas[1])
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        check_unsupported(defaults)
        super().__init__(params, defaults)

    def _state(self, p):
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = new_state(p, "exp_avg", "exp_avg_sq")
            state["mu_product"] = wrap(np.ones((), np.float32), dtypes.float32)
        return state

    def _update(self, p, group):
        state = self._state(p)
        step = advance(state)
        grad = signed_grad(p, group)
        beta1, beta2 = group["betas"]
        lr, wd, decay = group["lr"], group["weight_decay"], group["momentum_decay"]
        correction2 = 1 - beta2**step
        if wd and group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        elif wd:
            grad = F.add(grad, p, alpha=wd)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        product = state["mu_product"]
        product._data = (product._data * np.float32(mu)).astype(np.float32)
        mu_product = float(product._data)
        state["exp_avg"].lerp_(grad, 1 - beta1)
        state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = F.sqrt(F.div(state["exp_avg_sq"], correction2)).add_(group["eps"])
        p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        p.addcdiv_(state["exp_avg"], denom, value=(-lr * mu_next) / (1.0 - mu_product * mu_next))
