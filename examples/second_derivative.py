"""Higher-order gradients with create_graph: second derivatives and a Hessian-vector product.

Run: python examples/second_derivative.py
"""

import adcompile as torch

x = torch.tensor(2.0, requires_grad=True)
y = x**3
(dy,) = torch.autograd.grad(y, x, create_graph=True)  # 3x^2 = 12, itself differentiable
(d2y,) = torch.autograd.grad(dy, x, create_graph=True)  # 6x = 12
(d3y,) = torch.autograd.grad(d2y, x)  # 6
print("y = x^3 at 2:", dy.item(), d2y.item(), d3y.item())

# Hessian-vector product of f(p) = sum(p^2 * q) + sum(sin(p)) without forming the Hessian
p = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
q = torch.tensor([2.0, 3.0, 4.0])
f = (p**2 * q).sum() + p.sin().sum()
(grad_f,) = torch.autograd.grad(f, p, create_graph=True)
v = torch.tensor([1.0, 0.0, -1.0])
(hvp,) = torch.autograd.grad(grad_f, p, grad_outputs=v)
print("gradient:", grad_f.detach())
print("H v     :", hvp)
print("check   :", (2 * q - p.detach().sin()) * v)
