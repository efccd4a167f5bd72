"""torch.optim for the eager runtime: SGD and Adam with PyTorch's update rules, in the same
order of floating point operations, so trajectories match PyTorch's for the same inputs."""

import math

from runtime import ops as F
from runtime.creation import zeros_like
from runtime.grad_mode import no_grad
from runtime.tensor import Tensor


class Optimizer:
    """Holds parameter groups (lists of parameters with their hyper-parameters) and state."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = {}
        self.param_groups = []
        params = list(params)
        if not params:
            raise ValueError("the optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, group):
        group = dict(group)
        ps = group["params"]
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        for p in group["params"]:
            if not isinstance(p, Tensor) or not p.is_leaf:
                raise ValueError("optimizers can only update leaf tensors")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    @no_grad()
    def step(self, closure=None):
        loss = _run_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    self._update(p, group)
        return loss

    def _update(self, p, group):
        raise NotImplementedError

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if p._grad._grad_fn is not None:
                        p._grad = p._grad.detach()
                    p._grad.zero_()

    def state_dict(self):
        index = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        params = [p for g in self.param_groups for p in g["params"]]
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {params[i]: dict(s) for i, s in state_dict["state"].items()}

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines += [""] if i else []
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be non-negative")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and no dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p, g):
        grad = p._grad if not g["maximize"] else F.neg(p._grad)
        if g["weight_decay"]:
            grad = F.add(grad, p, alpha=g["weight_decay"])
        momentum = g["momentum"]
        if momentum:
            state = self.state.setdefault(p, {})
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = F.clone(grad).detach()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - g["dampening"])
            grad = F.add(grad, buf, alpha=momentum) if g["nesterov"] else buf
        p.add_(grad, alpha=-g["lr"])


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, maximize=False):
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError("Adam needs lr >= 0, eps >= 0 and betas in [0, 1)")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _state(self, p, amsgrad):
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = {"step": 0, "exp_avg": zeros_like(p),
                                     "exp_avg_sq": zeros_like(p)}
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _update(self, p, g):
        beta1, beta2 = g["betas"]
        grad = p._grad if not g["maximize"] else F.neg(p._grad)
        state = self._state(p, g["amsgrad"])
        state["step"] += 1
        step = state["step"]
        if g["weight_decay"]:
            grad = F.add(grad, p, alpha=g["weight_decay"])
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = g["lr"] / (1 - beta1**step)
        correction2_sqrt = math.sqrt(1 - beta2**step)
        if g["amsgrad"]:
            best = state["max_exp_avg_sq"]
            best.copy_(F.maximum(best, exp_avg_sq))
            denom = F.div(F.sqrt(best), correction2_sqrt).add_(g["eps"])
        else:
            denom = F.div(F.sqrt(exp_avg_sq), correction2_sqrt).add_(g["eps"])
        p.addcdiv_(exp_avg, denom, value=-step_size)


def _run_closure(closure):
    if closure is None:
        return None
    from runtime.grad_mode import enable_grad

    with enable_grad():
        return closure()


# the optimizer families (each module imports Optimizer from here)
from runtime.optim.adamw import AdamW  # noqa: E402
from runtime.optim.rmsprop import RMSprop  # noqa: E402
from runtime.optim.adagrad import Adagrad  # noqa: E402
from runtime.optim.adadelta import Adadelta  # noqa: E402
from runtime.optim.adamax import Adamax  # noqa: E402
from runtime.optim.nadam import NAdam  # noqa: E402
from runtime.optim.radam import RAdam  # noqa: E402
from runtime.optim import lr_scheduler  # noqa: E402
from runtime.optim.lbfgs import LBFGS  # noqa: E402
