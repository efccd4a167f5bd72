"""torch.optim.Adagrad (dense gradients), in PyTorch's single-tensor order of operations.
As in PyTorch, state is created for every parameter when the optimizer is built."""

from runtime import ops as F
from runtime.creation import full_like
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unsupported, signed_grad
from runtime.optim._common import step_tensor


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        check_nonneg(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                     initial_accumulator_value=initial_accumulator_value)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        check_unsupported(defaults)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {"step": step_tensor(),
                                 "sum": full_like(p, group["initial_accumulator_value"])}

    def _update(self, p, group):
        state = self.state[p]
        step = advance(state)
        grad = signed_grad(p, group)
        if group["weight_decay"]:
            grad = F.add(grad, p, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state["sum"].addcmul_(grad, grad, value=1)
        std = F.sqrt(state["sum"]).add_(group["eps"])
        p.addcdiv_(grad, std, value=-clr)
