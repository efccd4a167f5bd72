"""Fit y = 3x - 2 (plus noise) with nn.Linear and SGD; the loss falls as training runs.

Run: python examples/linear_regression.py
"""

import adcompile as torch

torch.manual_seed(0)
x = torch.rand(200, 1) * 4 - 2
y = 3 * x - 2 + 0.1 * torch.randn(200, 1)

model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = torch.nn.MSELoss()

for epoch in range(101):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if epoch % 20 == 0:
        print(f"epoch {epoch:3d}  loss {loss.item():.5f}")

print(f"learned weight {model.weight.item():.3f} (true 3), bias {model.bias.item():.3f} (true -2)")
