import torch

# Seed 000: backward(), torch.autograd.grad, grad_fn / next_functions (calling nodes by
# hand), hooks on tensors and on graph nodes.

print("---", "scalar backward")
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
z = x**2+y
z.backward()
print(z, x.grad, y.grad)

print("---", "tensor backward (non-scalar, raises)")
try:
    x = torch.ones(2,requires_grad=True)
    z = x + 2
    z.backward()
except Exception as e:
    print(type(e).__name__)

print("---", "tensor backward with grad_tensors")
x = torch.ones(2,requires_grad=True)
z = x + 2
z.backward(torch.ones_like(z))
print(x.grad)  # [added] the tutorial states the result in prose only

print("---", "autograd.grad")
import torch
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
z = x**2+y
z.backward()
print(z, x.grad, y.grad)


x = torch.tensor(2.0, requires_grad=True)
z = x**2
print(torch.autograd.grad(outputs=z, inputs=x), x.grad)

print("---", "grad_fn and next_functions: backward")
torch.manual_seed(6)
x = torch.randn(4, 4, requires_grad=True)
y = torch.randn(4, 4, requires_grad=True)
z = x * y
l = z.sum()
l.backward()
print(x.grad)
print(y.grad)

print("---", "grad_fn and next_functions: calling the nodes by hand")
torch.manual_seed(6)
x = torch.randn(4, 4, requires_grad=True)
y = torch.randn(4, 4, requires_grad=True)
z = x * y
l = z.sum()
dl = torch.tensor(1.)
back_sum = l.grad_fn
dz = back_sum(dl)
back_mul = back_sum.next_functions[0][0]
dx, dy = back_mul(dz)
back_x = back_mul.next_functions[0][0]
back_x(dx)
back_y = back_mul.next_functions[1][0]
back_y(dy)
print(x.grad)
print(y.grad)

print("---", "another example")
A = torch.tensor(2., requires_grad=True)
B = torch.tensor(.5, requires_grad=True)
E = torch.tensor(1., requires_grad=True)
C = A * B
D = C.exp()
F = D + E
print(F)
print([x.is_leaf for x in [A, B, C, D, E, F]])
print([x.grad_fn for x in [F, D, C, A]])
print(F.grad_fn.next_functions)
F.backward(retain_graph=True)
print(A.grad, B.grad, E.grad)
print(C.grad, D.grad)

print("---", "register_hook on a Parameter")
import torch

def print_grad(grad):
    print(grad)
    return grad / 2

torch.manual_seed(0)
w = torch.nn.Parameter(torch.randn(2, 2))
w.register_hook(print_grad)

loss = (w - 1) ** 2
print('before backward')
loss.mean().backward()
print('after backward')
print(w.grad)

print("---", "hooks on a tensor and on an operator")


def parameter_hook(grad):
    print('parameter hook')

def operator_hook(*grads):
    print('operator hook' )

w = torch.nn.Parameter(torch.randn(2, 2))
w.register_hook(parameter_hook)

print('first')
y = w + 1
op1 = y.grad_fn
print(op1)
op1.register_hook(operator_hook)
y.sum().backward()

print('second')
z = w + 1
op2 = z.grad_fn
print(op2)
z.sum().backward()
