"""The fit with nn: the powers of x are features of a Linear layer, flattened to a vector."""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
print(xx.shape, xx.dtype)

model = nn.Sequential(
    nn.Linear(3, 1),
    nn.Flatten(0, 1),
)
loss_fn = nn.MSELoss(reduction="sum")

learning_rate = 1e-6
for t in range(500):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 50 == 49:
        print(t, loss.item())
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear_layer = model[0]
print(linear_layer)
print(f"Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
      f"{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3")
