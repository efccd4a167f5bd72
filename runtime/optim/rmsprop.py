"""torch.optim.RMSprop (plain or centered, with optional momentum), in PyTorch's
single-tensor order of operations."""

from runtime import ops as F
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unsupported
from runtime.optim._common import new_state, signed_grad


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_nonneg(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                     alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        check_unsupported(defaults)
        super().__init__(params, defaults)

    def _state(self, p, group):
        state = self.state.get(p)
        if state is None:
            names = ["square_avg"]
            names += ["momentum_buffer"] if group["momentum"] > 0 else []
            names += ["grad_avg"] if group["centered"] else []
            state = self.state[p] = new_state(p, *names)
        return state

    def _update(self, p, group):
        state = self._state(p, group)
        grad = signed_grad(p, group)
        advance(state)
        alpha, lr = group["alpha"], group["lr"]
        if group["weight_decay"]:
            grad = F.add(grad, p, alpha=group["weight_decay"])
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = F.sqrt(square_avg)
        avg = avg.add_(group["eps"])
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).addcdiv_(grad, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(grad, avg, value=-lr)


