import torch
import torch.nn as nn

# Seed 003: is_leaf / requires_grad / grad_fn / grad for simple ops and nn modules.
# Fragments with undefined names (`model`, `self.backbone`, the autograd.grad signature)
# are left out. Where a comment states the result of `check(x)`, check(x) is called.

torch.manual_seed(0)

print("---", "requires_grad of a non-leaf (raises)")
try:
    x = torch.rand(1, 3)
    y = nn.Linear(3, 5)(x)
    y.requires_grad = False
except Exception as e:
    print(type(e).__name__)

print("---", "setting requires_grad")
# set at intialization
x = torch.rand(3, requires_grad=True)
# both following method just change the flag in-place.
x.requires_grad = True
x.requires_grad_(True) # also return the tensor itself.
print(x.requires_grad_(True) is x)  # [added] shows what the comment states

print("---", "nn.Parameter and module parameters")


def check(x):
    print(f'is_leaf: {x.is_leaf}, requires_grad: {x.requires_grad}, grad_fn: {x.grad_fn}, grad: {x.grad}')


# nn.Parameter (which is used inside nn.Module) automatically requires grad.
x = nn.Parameter(torch.rand(3))
check(x)
# is_leaf: True, requires_grad: True, grad_fn: None, grad: None
x = nn.Linear(3, 5).weight
check(x)
# is_leaf: True, requires_grad: True, grad_fn: None, grad: None

print("---", "no_grad as a decorator")
@torch.no_grad()
def func(x):
    ...

print("---", "full example: simple operations")
import torch
import torch.nn as nn

def check(x):
    print(f'is_leaf: {x.is_leaf}, requires_grad: {x.requires_grad}, grad_fn: {x.grad_fn}, grad: {x.grad}')

#####################
### simple operations

x = torch.rand(3)
check(x)
# is_leaf: True, requires_grad: False, grad_fn: None, grad: None

x = torch.rand(3, requires_grad=True)
check(x)
# is_leaf: True, requires_grad: True, grad_fn: None, grad: None

x = torch.rand(3, requires_grad=True) + 1
check(x)
# is_leaf: False, requires_grad: True, grad_fn: <AddBackward0 object at 0x7f7df1added0>, grad: None

try:
    x = torch.rand(3, requires_grad=True).cuda()
    check(x)
except Exception as e:
    print(type(e).__name__)
# is_leaf: False, requires_grad: True, grad_fn: <CopyBackwards object at 0x7f7e2efe90d0>, grad: None
# note: cuda() is also a Function!

x = torch.rand(3) + 1
check(x)
# is_leaf: True, requires_grad: False, grad_fn: None, grad: None

try:
    x = torch.rand(3).cuda()
    check(x)
except Exception as e:
    print(type(e).__name__)
# is_leaf: True, requires_grad: False, grad_fn: None, grad: None

print("---", "full example: nn.Module")
##############
### nn.Module

try:
    x = torch.rand(3, requires_grad=True, device='cuda')
    check(x)
except Exception as e:
    print(type(e).__name__)
# cuda:0, is_leaf: True, requires_grad: True, grad_fn: None, grad: None

lin = nn.Linear(3, 5)
check(lin.weight)
# is_leaf: True, requires_grad: True, grad_fn: None, grad: None

x = torch.rand(1, 3)
y = lin(x)
check(y)
# is_leaf: False, requires_grad: True, grad_fn: <AddmmBackward object at 0x7f7e4004c9d0>, grad: None

gt = torch.rand(1, 5)
try:
    l = nn.L1Loss(y, gt)
    check(l)
except Exception as e:
    print(type(e).__name__)
# is_leaf: False, requires_grad: True, grad_fn: <L1LossBackward object at 0x7f7e40021c90>, grad: None

print("---", "full example: L1Loss used as intended, backward")
l = nn.L1Loss()(y, gt)   # what the tutorial means; the line above raises on 2.13
check(l)

l.backward()
check(lin.weight)
# is_leaf: True, requires_grad: True, grad_fn: None, grad: tensor([...])
# note: other tensors (x, y, l, gt) will still have grad == None.
check(x)
check(y)
check(l)
check(gt)
