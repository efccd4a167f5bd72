"""Train a model whose loop-heavy loss is compiled: one node of the eager graph.

A linear layer turns a sequence of features into a drive signal u; a leaky recurrence
h[t] = tanh(a * h[t-1] + u[t]) with a learnable decay `a` must track a target. The recurrence
and its loss are a plain Python loop under @adcompile; called with the layer's output and a
Parameter, it becomes one CompiledFunctionBackward node, and optim.Adam trains through it.
The same model with the loop written in eager Tensor ops trains alongside: both print the
same loss trajectory.

Run: python examples/compiled_loss.py
"""

import numpy as np

import adcompile as torch
from adcompile import adcompile


@adcompile
def rollout_loss(u, a, target):
    h = 0.0 * a
    total = 0.0 * a
    for t in range(u.shape[0]):
        h = np.tanh(a * h + u[t])
        total = total + (h - target[t]) ** 2
    return total / u.shape[0]


def rollout_loss_eager(u, a, target):
    h = 0.0 * a
    total = 0.0 * a
    for t in range(u.shape[0]):
        h = (a * h + u[t]).tanh()
        total = total + (h - target[t]) ** 2
    return total / u.shape[0]


class Tracker(torch.nn.Module):
    def __init__(self, loss_fn):
        super().__init__()
        self.drive = torch.nn.Linear(4, 1)
        self.decay = torch.nn.Parameter(torch.tensor(0.5))
        self.loss_fn = loss_fn

    def forward(self, features, target):
        u = self.drive(features).squeeze(1)
        return self.loss_fn(u, self.decay, target)


def train(loss_fn, features, target, steps=60):
    torch.manual_seed(0)
    model = Tracker(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    trajectory = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = model(features, target)
        loss.backward()
        optimizer.step()
        trajectory.append(loss.item())
    return model, trajectory, loss


torch.manual_seed(1)
features = torch.randn(200, 4)
target = torch.sin(torch.linspace(0.0, 12.0, 200)) * 0.8

compiled, compiled_losses, last = train(rollout_loss, features, target)
eager, eager_losses, _ = train(rollout_loss_eager, features, target)
print(f"loss node: {type(last.grad_fn).__name__}")
print("step   compiled    eager")
for step in range(0, 60, 10):
    print(f"{step:4d}   {compiled_losses[step]:.5f}   {eager_losses[step]:.5f}")
print(f"final  {compiled_losses[-1]:.5f}   {eager_losses[-1]:.5f}")
difference = max(abs(p - q) for p, q in zip(compiled_losses, eager_losses))
print(f"largest difference between the trajectories: {difference:.1e}")
print(f"learned decay: compiled {compiled.decay.item():.4f}, eager {eager.decay.item():.4f}")
