"""The 60-minute blitz's autograd chapter: gradients of a small expression, what leaves out the
DAG, and freezing a network for finetuning (a small stand-in for the pretrained ResNet, which
would need a download)."""

import torch
from torch import nn, optim

torch.manual_seed(0)

# A forward pass through a tiny model, its loss, a backward pass and one optimizer step.
model = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 5))
data = torch.rand(1, 12)
labels = torch.rand(1, 5)
prediction = model(data)
loss = (prediction - labels).sum()
loss.backward()
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
optimizer.step()
print("prediction:", prediction)
print("loss:", loss)
print("first weight row after the step:", model[0].weight[0])

# Differentiation in autograd: Q = 3a^3 - b^2 has dQ/da = 9a^2 and dQ/db = -2b.
a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3 * a ** 3 - b ** 2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
print(9 * a ** 2 == a.grad)
print(-2 * b == b.grad)
print(a.grad, b.grad, Q)

# Excluding from the DAG.
x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")

# Finetuning: freeze everything, replace the classifier; only it is trained.
for param in model.parameters():
    param.requires_grad = False
model[2] = nn.Linear(8, 10)
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
print([name for name, p in model.named_parameters() if p.requires_grad])
out = model(torch.rand(3, 12)).sum()
out.backward()
print(model[0].weight.grad is None, model[2].weight.grad.shape)
print(out)
