"""torch.optim.Adadelta, in PyTorch's single-tensor order of operations."""

from runtime import ops as F
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unsupported, new_state
from runtime.optim._common import signed_grad


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_nonneg(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"invalid rho: {rho} (must be in [0, 1])")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        check_unsupported(defaults)
        super().__init__(params, defaults)

    def _update(self, p, group):
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = new_state(p, "square_avg", "acc_delta")
        advance(state)
        grad = signed_grad(p, group)
        rho, eps = group["rho"], group["eps"]
        if group["weight_decay"]:
            grad = F.add(grad, p, alpha=group["weight_decay"])
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = F.add(square_avg, eps).sqrt_()
        delta = F.add(acc_delta, eps).sqrt_()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-group["lr"])
