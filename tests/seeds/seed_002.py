# Seed 002: graph construction, retain_grad, no_grad loops, detach, clone cases, in-place
# rules on leaves, slicing and CopySlices, function minimisation with SGD.
import torch
from torch import tensor, empty, ones, zeros

print("---", "graph construction")
v = zeros(2)
print(v.data)
print(v.grad)
print(v.grad_fn)
print(v.is_leaf)
print(v.requires_grad)

x = ones(2, requires_grad=True)
y = empty(2).fill_(3)
y.requires_grad = True
print(y)

z = (y*y).sum()
print(z)
print(y.is_leaf, z.is_leaf)
print(y.requires_grad, y.grad_fn)
print(z.requires_grad, z.grad_fn)

print("---", "gradient computation")
print(y.grad)
z.backward()
print(y.grad)

x = ones(1, requires_grad=True)
a = tensor(-4.)
z = 8*x + a
z.backward()
print(x, x.grad)
print(a, a.grad)
print(z)

print("---", "retain_grad")
x = tensor(2., requires_grad=True)
y = x**2; y.retain_grad()
z = 2*y; z.retain_grad()
z.backward()
print(z.item(), y.item(), x.item())
print(z.grad.item(),y.grad.item(),x.grad.item())

print("---", "pausing graph construction")
for i in range(1,3):
    x = empty(2).fill_(i).requires_grad_(True)
    z = x.dot(x)
    z.backward()
    print(z.item(), x.grad)

x = empty(2).requires_grad_(True)
for i in range(1,3):
    with torch.no_grad():
        x.fill_(i)
    z = x.dot(x)
    z.backward()
    print(z.item(), x.grad.numpy())
    x.grad.zero_()

for i in range(1,3):
    x.data.fill_(i)
    z = x.dot(x)
    z.backward()
    print(z.item(), x.grad.numpy())
    x.grad.zero_()

x = ones(1, requires_grad=True)
with torch.no_grad():
    z1 = 2 * x
    with torch.enable_grad():
        z2 = 2 * x
print(x.requires_grad, z1.requires_grad, z2.requires_grad)

print("---", "detach")
x = tensor([1.,2.], requires_grad=True)
y = x.detach()
print(x)
print(y)
y[0]=5
print(x)

x = empty(2).requires_grad_(True)
xd = x.detach()
for i in range(1,3):
    xd.fill_(i)
    z = x.dot(x)
    z.backward()
    print(z.item(), x.grad)
    x.grad.zero_()

print("---", "clone cases")
for case in "ABCDE":
    x = tensor(3.).requires_grad_(True)
    if case == "A":
        y = tensor(3.).requires_grad_(True)
    elif case == "B":
        y = x
    elif case == "C":
        y = tensor(1.)
    elif case == "D":
        y = x.detach().clone()
    else:
        y = x.clone()
    z = x + y*y
    z.backward()
    print(case, z, x.grad, y.grad if y.is_leaf else None, y.requires_grad, y.grad_fn)

x = torch.ones(1, requires_grad=True)
with torch.no_grad():
    y = x.clone()
print(y.requires_grad, y.grad_fn)
y = x.detach().clone()
print(y.requires_grad, y.grad_fn)
y = x.clone()
print(y.requires_grad, y.grad_fn)

print("---", "what not to do with leaves")
x = ones(1); print(x)
x += 1; print(x)
x.add_(1); print(x)
x = x + 1; print(x)

try:
    x = tensor(1., requires_grad=True)
    x += 1
except Exception as e:
    print(type(e).__name__)

try:
    x = ones(1,requires_grad=True); print(x)
    y = x ; print(y)
    y *= 1
except Exception as e:
    print(type(e).__name__)

x = tensor(1.,requires_grad=True)
y = 2*x
print(y)
y += 2
print(y)
y.log_()
print(y)
y.backward()
print(x.grad)

x = tensor(1., requires_grad=True)
x = x + 1
print(x)

print("---", "slicing")
try:
    x = tensor(1., requires_grad=True)
    s = ones(2)
    s[1] = s[0] * x
    print(s, s.grad_fn.next_functions)
    z = s.sum()
    z.backward()
except Exception as e:
    print(type(e).__name__)

x = tensor(1., requires_grad=True)
s = ones(2)
s[1] = s[0].clone() * x
z = s.sum()
z.backward()
print(s, x.grad)

try:
    torch.manual_seed(0)
    x, w = torch.randn(1), torch.randn(1, requires_grad=True)
    w[0] = 1.
    y = x*w
    y.backward()
except Exception as e:
    print(type(e).__name__)

torch.manual_seed(0)
y = []
for i in range(10):
    x = torch.randn(1,16,16, requires_grad=True)
    y.append( x )
y = torch.cat(y, dim=0)
z = y.sum()
z.backward()
print(y.grad_fn, z)

torch.manual_seed(0)
y = torch.empty(10,16,16)
for i in range(10):
    x = torch.randn(16,16, requires_grad=True)
    y[i] = x
z = y.sum()
z.backward()
print(y.grad_fn, z, x.grad.sum())

print("---", "function minimisation")
def fun(x):
    return x[0]**2 + (x[1]-1)**2

x = torch.tensor([1.,2.], requires_grad=True)
optimizer = torch.optim.SGD([x], lr=1, momentum=0.5)
for it in range(20):
    optimizer.zero_grad()
    y = fun(x)
    y.backward()
    optimizer.step()
    print(y.item(), x.detach().numpy())
print(x, x.grad, x._version)
