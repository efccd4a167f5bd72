# Seed 003: is_leaf / requires_grad / grad_fn / grad for simple ops and nn modules.
import torch
import torch.nn as nn

torch.manual_seed(0)

print("---", "requires_grad on a non-leaf")
try:
    x = torch.rand(1, 3)
    y = nn.Linear(3, 5)(x)
    y.requires_grad = False
except Exception as e:
    print(type(e).__name__)

x = torch.rand(3, requires_grad=True)
x.requires_grad = True
print(x.requires_grad_(True) is x)
x = nn.Parameter(torch.rand(3))
x = nn.Linear(3, 5).weight

print("---", "backward on a leaf without grad")
try:
    torch.rand(3).backward()
except Exception as e:
    print(type(e).__name__)


def check(x):
    print(f'is_leaf: {x.is_leaf}, requires_grad: {x.requires_grad}, grad_fn: {type(x.grad_fn).__name__ if x.grad_fn is not None else None}, grad: {x.grad}')


print("---", "simple operations")
x = torch.rand(3)
check(x)
x = torch.rand(3, requires_grad=True)
check(x)
x = torch.rand(3, requires_grad=True) + 1
check(x)
try:
    x = torch.rand(3, requires_grad=True).cuda()
    check(x)
except Exception as e:
    print(type(e).__name__)
x = torch.rand(3, requires_grad=True).to(torch.float64)
check(x)
x = torch.rand(3, requires_grad=True)
check(x.to(torch.float32))
x = torch.rand(3) + 1
check(x)
try:
    x = torch.rand(3).cuda()
    check(x)
except Exception as e:
    print(type(e).__name__)

print("---", "nn.Module")
try:
    x = torch.rand(3, requires_grad=True, device='cuda')
    check(x)
except Exception as e:
    print(type(e).__name__)
lin = nn.Linear(3, 5)
check(lin.weight)
x = torch.rand(1, 3)
y = lin(x)
check(y)
gt = torch.rand(1, 5)
try:
    l = nn.L1Loss(y, gt)
    check(l)
except Exception as e:
    print(type(e).__name__)
l = nn.L1Loss()(y, gt)
check(l)
l.backward()
check(lin.weight)
check(lin.bias)
check(x)
check(gt)

print("---", "no_grad and eval")
@torch.no_grad()
def func(x):
    return x * 2

print(func(torch.rand(3, requires_grad=True)).requires_grad)
lin.eval()
with torch.no_grad():
    print(lin(x).requires_grad)
print(lin(x).requires_grad)
with torch.set_grad_enabled(False):
    print(lin(x).requires_grad)
with torch.set_grad_enabled(True):
    inp = torch.rand(2, 3)
    inp.requires_grad_(True)
    sigma = (inp ** 2).sum(1)
    normal = - torch.autograd.grad(torch.sum(sigma), inp, create_graph=True)[0]
    print(sigma, normal)
