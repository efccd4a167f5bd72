"""torch.optim.lr_scheduler: schedules that rewrite each param group's "lr" as PyTorch's do.

The recursive (chainable) formulas PyTorch uses in step() are used here too, so the learning
rates agree to the last bit. A scheduler's first step happens in its constructor (epoch 0).
"""

import math
import warnings
from collections import Counter

from runtime.optim import Optimizer


class LRScheduler:
    """Base class: holds base_lrs, last_epoch and steps the optimizer's learning rates."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param group {i} has no 'initial_lr'; load the optimizer's "
                               "state before resuming a scheduler with last_epoch >= 0")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        return self._last_lr

    def _group_lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn("passing an epoch to step() is deprecated", UserWarning, stacklevel=2)
            self.last_epoch = epoch
            values = getattr(self, "_get_closed_form_lr", self.get_lr)()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self._group_lrs()

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"expected {n} lr_lambdas (one per param group), got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return [lo + (b - lo) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, lr in zip(self.base_lrs, self._group_lrs())]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - lo) + lo for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * t / T)) / 2 for b in self.base_lrs]


def _per_group(name, optimizer, value):
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} needs one value per param group ({n}), got {len(value)}")
        return list(value)
    return [value] * n


def _anneal_cos(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _anneal_linear(start, end, pct):
    return (end - start) * pct + start


_ANNEAL = {"cos": _anneal_cos, "linear": _anneal_linear}


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up to max_lr, then anneal to initial_lr / final_div_factor,
    cycling momentum (or beta1) the other way."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True,
                 base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(pct_start, self.total_steps, three_phase)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"pct_start must be a float in [0, 1], got {pct_start}")
        if anneal_strategy not in _ANNEAL:
            raise ValueError(f"anneal_strategy must be 'cos' or 'linear', not "
                             f"{anneal_strategy!r}")
        self._anneal = _ANNEAL[anneal_strategy]
        if last_epoch == -1:
            for m, group in zip(_per_group("max_lr", optimizer, max_lr), optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(max_momentum, base_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _init_momentum(self, max_momentum, base_momentum, last_epoch):
        opt = self.optimizer
        if "momentum" not in opt.defaults and "betas" not in opt.defaults:
            raise ValueError("cycle_momentum needs an optimizer with momentum or betas")
        self.use_beta1 = "betas" in opt.defaults
        highs = _per_group("max_momentum", opt, max_momentum)
        lows = _per_group("base_momentum", opt, base_momentum)
        if last_epoch != -1:
            return
        for hi, lo, group in zip(highs, lows, opt.param_groups):
            self._set_momentum(group, hi)
            group["max_momentum"], group["base_momentum"] = hi, lo

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"stepped {step} times, past total_steps={self.total_steps}")
        return [self._group_lr(group, step) for group in self.optimizer.param_groups]

    def _group_lr(self, group, step):
        start = 0.0
        last = len(self._schedule_phases) - 1
        for i, phase in enumerate(self._schedule_phases):
            end = phase["end_step"]
            if step <= end or i == last:
                pct = (step - start) / (end - start)
                if self.cycle_momentum:
                    self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                           group[phase["end_momentum"]], pct))
                return self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
            start = end


def _total_steps(total_steps, epochs, steps_per_epoch):
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"total_steps must be a positive int, got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("give total_steps, or both epochs and steps_per_epoch")
    for name, v in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v}")
    return epochs * steps_per_epoch


def _phase(end_step, lr, momentum):
    return {"end_step": end_step, "start_lr": lr[0], "end_lr": lr[1],
            "start_momentum": momentum[0], "end_momentum": momentum[1]}


def _phases(pct_start, total, three_phase):
    up = float(pct_start * total) - 1
    if three_phase:
        return [_phase(up, ("initial_lr", "max_lr"), ("max_momentum", "base_momentum")),
                _phase(float(2 * pct_start * total) - 2, ("max_lr", "initial_lr"),
                       ("base_momentum", "max_momentum")),
                _phase(total - 1, ("initial_lr", "min_lr"), ("max_momentum", "max_momentum"))]
    return [_phase(up, ("initial_lr", "max_lr"), ("max_momentum", "base_momentum")),
            _phase(total - 1, ("max_lr", "min_lr"), ("base_momentum", "max_momentum"))]


_BETTER = {
    ("min", "rel"): lambda a, best, th: a < best * (1.0 - th),
    ("min", "abs"): lambda a, best, th: a < best - th,
    ("max", "rel"): lambda a, best, th: a > best * (th + 1.0),
    ("max", "abs"): lambda a, best, th: a > best + th,
}


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the learning rate by `factor` once a metric has stopped improving for more
    than `patience` steps, then waits `cooldown` steps."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("factor must be < 1.0")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode!r} is unknown (use 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode!r} is unknown (use 'rel' or 'abs')")
        self.optimizer, self.factor = optimizer, factor
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.min_lrs = _per_group("min_lr", optimizer, min_lr)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        return _BETTER[self.mode, self.threshold_mode](a, best, self.threshold)

    def step(self, metrics, epoch=None):
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._group_lrs()

    def _reduce_lr(self):
        for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                group["lr"] = new


__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR",
           "CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau"]
