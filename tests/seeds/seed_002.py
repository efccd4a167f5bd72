import torch

# Seed 002: graph construction, retain_grad, pausing the graph (no_grad / .data / detach),
# clone cases, in-place rules on leaves, slicing and CopySlices, minimisation with SGD.
#
# The tutorial states most values in comments (`# tensor(4., grad_fn=<AddBackward0>)`);
# where it does, the commented expression is printed at that point. `id()` values differ
# from run to run, so `id` is replaced by a stand-in that numbers objects in the order it
# first sees them (the tutorial's point is which ids are equal).
# Other lines not in the tutorial: the guard around `import torchviz` (not installed) and
# the prints marked [added] after the two speed examples (which print nothing).

print("---", "graph construction")
from torch import tensor, empty, ones, zeros
v = zeros(2)                # 2D vector of zeros
print(v.data)               # tensor([0.,0.]) - tensor data (same as just v)
print(v.grad)               # None - gradient of the tensor (not yet available)
print(v.grad_fn)            # None - function that produced it (no graph yet)
print(v.is_leaf)            # True - is a leaf node of the graph (yes)
print(v.requires_grad)      # False - requires gradient (not yet)

print("---", "requires_grad at construction or later")
x = ones(2, requires_grad=True)   # vector [1., 1.] is immediately a graph node
y = empty(2).fill_(3)             # first create vector [3.,3.],
y.requires_grad = True            # then declare it as a graph node
print(y)                          # tensor([3., 3.], requires_grad=True)

print("---", "grad_fn of non-leaf nodes")
z = (y*y).sum()                   # scalar (dim=0) y[0]**2 + y[1]**2
print(z)                          # tensor(18., grad_fn=<SumBackward0>)
print(y.is_leaf, z.is_leaf)       # True False
print(y.requires_grad, y.grad_fn) # True None
print(z.requires_grad, z.grad_fn) # True <SumBackward0>

print("---", "gradient computation")
print(y.grad)                     # None
z.backward()                      # start gradient computation
print(y.grad)                     # tensor([6., 6.]) - sum of 2 incoming grads

print("---", "constants")
x = ones(1, requires_grad=True)
a = tensor(-4.)
z = 8*x + a
z.backward()

print(x, x.grad)                  # tensor([1.], requires_grad=True), tensor([8.])
print(a, a.grad)                  # tensor([-4.]), None
print(z)                          # tensor([4.], grad_fn=<AddBackward0>)

print("---", "retain_grad")
x = tensor(2., requires_grad=True)
y = x**2; y.retain_grad()
z = 2*y; z.retain_grad()
z.backward()
print(z.item(), y.item(), x.item())               # 8.0 4.0 2.0
print(z.grad.item(),y.grad.item(),x.grad.item())  # 1.0 2.0 8.0

print("---", "rebuilding the graph")
for i in range(1,3):
    x = empty(2).fill_(i).requires_grad_(True)
    z = x.dot(x)       # graph
    z.backward()       # compute gradients
    print(z.item(), x.grad)

print("---", "no_grad")
x = empty(2).requires_grad_(True)
for i in range(1,3):
    with torch.no_grad():  # disabled gradient calculation
        x.fill_(i)         # modify existing values
    z = x.dot(x)
    z.backward()           # computation graph
    print(z.item(), x.grad.numpy())
    x.grad.zero_()         # reset gradients

print("---", ".data")
for i in range(1,3):
    x.data.fill_(i)        # modify existing values
    # ... (the rest of the loop above)
    z = x.dot(x)
    z.backward()
    print(z.item(), x.grad.numpy())
    x.grad.zero_()

print("---", "enable_grad")
x = ones(1, requires_grad=True)
with torch.no_grad():               # disable graph construction
    z1 = 2 * x
    with torch.enable_grad():       # enable graph construction
        z2 = 2 * x
print(x.requires_grad, z1.requires_grad, z2.requires_grad)   # True False True

print("---", "detach shares data")
x = tensor([1.,2.], requires_grad=True)
y = x.detach()
print(x)         # tensor([1., 2.], requires_grad=True)
print(y)         # tensor([1., 2.])
y[0]=5
print(x)         # tensor([5., 2.], requires_grad=True)

print("---", "detach instead of no_grad")
x = empty(2).requires_grad_(True)
xd = x.detach()
for i in range(1,3):
    xd.fill_(i)
    z = x.dot(x)        # start building the graph
    z.backward()        # compute the gradient graph
    print(z.item(), x.grad)
    x.grad.zero_()      # reset gradients

# The clone example: the tutorial's line A is live, B-E are commented-out alternatives;
# each is run in turn. Header comment: x.grad y.grad y.requires_grad
print("---", "clone case A")
x = tensor(3.).requires_grad_(True)
y = tensor(3.).requires_grad_(True)   # A: 1 6 True
z = x + y*y                           # z = 12
z.backward()
print(z, x.grad, y.grad, y.requires_grad)

print("---", "clone case B")
x = tensor(3.).requires_grad_(True)
y = x                                 # B: 7 7 True
z = x + y*y
z.backward()
print(z, x.grad, y.grad, y.requires_grad)

print("---", "clone case C")
x = tensor(3.).requires_grad_(True)
y = tensor(1.)                        # C: 1 None False
z = x + y*y
z.backward()
print(z, x.grad, y.grad, y.requires_grad)

print("---", "clone case D")
x = tensor(3.).requires_grad_(True)
y = x.detach().clone()                # D: 1 None False
z = x + y*y
z.backward()
print(z, x.grad, y.grad, y.requires_grad)

print("---", "clone case E")
x = tensor(3.).requires_grad_(True)
y = x.clone()                         # E: 7 None True, grad_fn=<CloneBackward>
z = x + y*y
z.backward()
print(z, x.grad, y.grad, y.requires_grad, y.grad_fn)

print("---", "clone under no_grad")
x = torch.ones(1, requires_grad=True)
                             # y.requires_grad: y.grad_fn:
with torch.no_grad():
    y = x.clone()            # False None
print(y.requires_grad, y.grad_fn)
y = x.detach().clone()       # False None
print(y.requires_grad, y.grad_fn)
y = x.clone()                # True <CloneBackward>
print(y.requires_grad, y.grad_fn)

print("---", "in-place keeps id")
_ids = {}
def id(obj, _id=id):
    return _ids.setdefault(_id(obj), len(_ids))

x = ones(1); print(x, id(x))      # tensor([1.]) 2769629314008
x += 1; print(x, id(x))           # tensor([2.]) 2769629314008 in-place
x.add_(1); print(x, id(x))        # tensor([3.]) 2769629314008 in-place
x = x + 1; print(x, id(x))        # tensor([4.]) 2769629311928 non in-place

print("---", "in-place on a leaf (raises)")
try:
    x = tensor(1., requires_grad=True)
    x += 1                        # in-place for leaf is not allowed!
except Exception as e:
    print(type(e).__name__)

print("---", "in-place through an alias of a leaf (raises)")
try:
    x = ones(1.,requires_grad=True); print(x,id(x))   # tensor(1.,requires_grad=True) ...95208
    y = x ; print(y,id(y))                           # tensor(1.,requires_grad=True) ...95208
    y *= 1                                           # in-place on a leaf variable
except Exception as e:
    print(type(e).__name__)

print("---", "in-place on non-leaf nodes")
x = tensor(1.,requires_grad=True)   # x.grad = tensor(0.5)
y = 2*x                             # tensor(2., grad_fn=<MulBackward0>)
print(y)
y += 2                              # tensor(4., grad_fn=<AddBackward0>)
print(y)
y.log_()                            # tensor(1.3863, grad_fn=<LogBackward> )
print(y)
y.backward()                        # y = log(2*x+2); y'=1/(x+1)
print(x.grad)

print("---", "reassigning a leaf")
x = tensor(1., requires_grad=True)  # tensor(1., requires_grad=True)
print(x)
x = x + 1                           # tensor(2., grad_fn=<AddBackward0>) no requires_grad
print(x)

print("---", "slicing (raises)")
try:
    x = tensor(1., requires_grad=True)
    s = ones(2)
    s[1] = s[0] * x     # s[1] = s[0].clone() * x <- this is the correct way!
    print(s)            # s.grad_fn=<CopySlices>
    z = s.sum()         # z = s[0] + s[0]*x
    z.backward()
except Exception as e:
    print(type(e).__name__)

print("---", "slicing, the correct way")
x = tensor(1., requires_grad=True)
s = ones(2)
s[1] = s[0].clone() * x
print(s)
z = s.sum()
z.backward()
print(x.grad)

print("---", "slice assignment to a leaf (raises)")
torch.manual_seed(0)
try:
    x, w = torch.randn(1), torch.randn(1, requires_grad=True)
    w[0] = 1.
    y = x*w
    y.backward()
except Exception as e:
    print(type(e).__name__)

print("---", "cat of leaves")
torch.manual_seed(0)
y = []
for i in range(100):
    x = torch.randn(1,256,256,
        requires_grad=True)
    y.append( x )
y = torch.cat(y, dim=0)
z = y.sum()
z.backward()
print(y.grad_fn, x.grad.sum())   # [added]

print("---", "slice assignment of leaves")
y = torch.empty(100,256,256)
for i in range(100):
    x = torch.randn(256,256,
        requires_grad=True)
    y[i] = x
z = y.sum()
z.backward()
print(y.grad_fn, x.grad.sum())   # [added] grad_fn=<CopySlices>

print("---", "visualization (torchviz is not installed)")
try:
    import torchviz
except Exception as e:
    print(type(e).__name__)
    torchviz = None
from torch import tensor, empty, ones, zeros
w, b = ones(5, requires_grad=True), tensor(0., requires_grad=True)
x = ones(5)
z = x.dot(w) + b
if torchviz is not None:
    torchviz.make_dot(z, params = {'x': x, 'w': w, 'b': b} )

print("---", "function minimization")
import torch
def fun(x):
    return x[0]**2 + (x[1]-1)**2

x = torch.tensor([1.,2.], requires_grad=True)       # initial values
optimizer = torch.optim.SGD([x], lr=1, momentum=0.5)

for it in range(20):
    optimizer.zero_grad()     # reset gradients
    y = fun(x)                # compute function value
    y.backward()              # compute gradients
    optimizer.step()          # update parameters

    print(y.item(), x.detach().numpy())
