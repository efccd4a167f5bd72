"""torch.optim.AdamW: Adam with decoupled weight decay (the parameter shrinks by
lr * weight_decay before the Adam step), in PyTorch's single-tensor order of operations."""

from runtime import ops as F
from runtime.optim import Optimizer
from runtime.optim._common import advance, check_nonneg, check_unit, new_state
from runtime.optim._common import check_unsupported, signed_grad

class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        check_nonneg(lr=lr, eps=eps, weight_decay=weight_decay)
        check_unit("beta1", betas[0])
        check_unit("beta2", betas[1])
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=True)
        check_unsupported(defaults)
        super().__init__(params, defaults)

    def _update(self, p, group):
        names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = new_state(p, *names)
        adam_step(p, signed_grad(p, group), state, group)

def adam_step(p, grad, state, group):
    """One Adam/AdamW update of p in place (weight decay decoupled when the group says so)."""
    beta1, beta2 = group["betas"]
    step = advance(state)
    lr, wd = group["lr"], group["weight_decay"]
    if wd and group.get("decoupled_weight_decay"):
        p.mul_(1 - lr * wd)
    elif wd:
        grad = F.add(grad, p, alpha=wd)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = lr / (1 - beta1**step)
    correction2_sqrt = (1 - beta2**step) ** 0.5
    second = exp_avg_sq
    if group["amsgrad"]:
        second = state["max_exp_avg_sq"]
        second.copy_(F.maximum(second, exp_avg_sq))
    denom = F.div(F.sqrt(second), correction2_sqrt).add_(group["eps"])
    p.addcdiv_(exp_avg, denom, value=-step_size)
