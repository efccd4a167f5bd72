import torch

# Seed 001: requires_grad_, backward, autograd.grad (incl. second derivatives), leaf
# variables, detach_, no_grad, retain_grad, gradient accumulation, walking the graph.

# The notebook also displays torch.__version__; adcompile reports its own version there.

print("---", "requires_grad_")
torch.manual_seed(0)
A = torch.randint(10, (1,2), dtype=torch.float)
print("A : ", A)

print("A.requires_grad :", A.requires_grad)

A.requires_grad_(True)
print("A.requires_grad :", A.requires_grad)

A.requires_grad_(False)
print("A.requires_grad :", A.requires_grad)

print("---", "backward: 5x^2+3")
x = torch.Tensor([4])
x.requires_grad_()

f = 5 * x ** 2 + 3

f.backward()
print("∂f/∂x| x=4 :", x.grad.item())

print("---", "backward: 5x^2+3sin(y)")
x = torch.Tensor([4])
x.requires_grad_()
y = torch.Tensor([0])
y.requires_grad_()

f = 5 * x**2 + 3*torch.sin(y)

f.backward()
print("∂f/∂x| x=4 :", x.grad.item())
print("∂f/∂y| y=0 :", y.grad.item())

print("---", "autograd.grad")
from torch import autograd
x = torch.Tensor([4])
x.requires_grad_()
y = torch.Tensor([0])
y.requires_grad_()

f = 5 * x**2 + 3*torch.sin(y)

df_dx = autograd.grad(f, x)[0]
print("∂f/∂x| x=4 :", df_dx.item())

df_dy = autograd.grad(f, y)[0]
print("∂f/∂y| y=0 :", df_dy.item())

print("---", "autograd.grad return types")
f = 5 * x**2 + 3*torch.sin(y)
print(type(autograd.grad(f, x)))
f = 5 * x**2 + 3*torch.sin(y)
print(autograd.grad(f, x))

f = 5 * x**2 + 3*torch.sin(y)
print(type(autograd.grad(f, x)[0]))
f = 5 * x**2 + 3*torch.sin(y)
print(autograd.grad(f, x)[0])

print("---", "second derivative")
x = torch.Tensor([4])
x.requires_grad_()
y = torch.Tensor([1])
y.requires_grad_()

f = 5 * x**2 * y

df_dx = autograd.grad(f, x, create_graph=True)[0]
print("∂f/∂x| x=4 :", df_dx.item())
d2f_dx2 = autograd.grad(df_dx, x)[0]
print("∂2f/∂x2| x=4 :", d2f_dx2.item())

df_dy = autograd.grad(f, y, create_graph=True)[0]
print("∂f/∂y| y=1 :", df_dy.item())

# allow_unused=True
d2f_dy2 = autograd.grad(df_dy, y, allow_unused=True)[0]
try:
    print("∂2f/∂y2| y=1 :", d2f_dy2.item()) # Error
except Exception as e:
    print(type(e).__name__)
print("∂2f/∂y2| y=1 :", d2f_dy2)

print("---", "f = sin(<x, y>)")
X = torch.Tensor([1, 2, 3]).requires_grad_(True)
Y = torch.Tensor([5, 6, 7]).requires_grad_(True)

f = torch.sin(torch.dot(X,Y))
print("f =", f)

print("---", "sin(<x, y>): backward")
# Gradient is populated by the backward function

f.backward()
print("\n-- Backward --\n")
print("X.grad :", X.grad)
print("Manual Derivative:", Y*torch.cos(torch.dot(X,Y)))
print("Y.grad :", Y.grad)

print("---", "sin(<x, y>): autograd.grad")
f = torch.sin(torch.dot(X,Y))

df_dx = autograd.grad(f, X, create_graph=True)[0]
print("∂f/∂x :", df_dx)

df_dy = autograd.grad(f, Y)[0]
print("∂f/∂y:", df_dy)

print("---", "sin(<x, y>): by hand")
df_dx_man = torch.cos(torch.dot(X,Y)) * Y
print("df / dx = ", df_dx_man)
df_dy_man = torch.cos(torch.dot(X,Y)) * X
print("df / dy = ", df_dy_man)
print(df_dx)
print(df_dx_man)

print("---", "leaf variables")
A = torch.Tensor([[1, 2], [3, 4]]).requires_grad_()
B = torch.Tensor([[1, 2], [3, 4]]).requires_grad_() + 2  # B is the result of an operation (+)
C = 5 * A  # C is the result of an operation (*)
D = torch.Tensor([[1, 2], [3, 4]])
print("A.is_leaf :", A.is_leaf)
print("B.is_leaf :", B.is_leaf)
print("C.is_leaf :", C.is_leaf)
print("D.is_leaf :", D.is_leaf)

print("---", "detach")
A = torch.Tensor([1, 2]).requires_grad_()
B = A.mean()

print("B : ", B)
print("B.grad_fn :", B.grad_fn)
print("B.is_leaf :", B.is_leaf)
B.backward()

print("---", "detach_")
B.detach_()
print("\n -- B.detach_() -- \n")

print("B : ", B)
print("B.grad_fn :", B.grad_fn)
print("B.is_leaf :", B.is_leaf)
# This won't work since B has no history.
try:
    B.backward()
except Exception as e:
    print(type(e).__name__)

print("---", "no_grad")
torch.manual_seed(0)
x = torch.randn(3, requires_grad=True)
print("x.requires_grad : ", x.requires_grad)

y = (x ** 2)
print("y.requires_grad : ", y.requires_grad)

with torch.no_grad():
    y = (x ** 2)
    print("y.requires_grad : ", y.requires_grad)

print("---", "retain grad: leaf")
x = torch.Tensor([4])
x.requires_grad_()

f = 5 * x ** 2 + 3

f.backward()
print("∂f/∂x| x=4 :", x.grad.item())

print("---", "retain grad: non-leaf without retain_grad")
A = torch.Tensor([[1, 2], [3, 4]])
A.requires_grad_()

B = 5 * (A + 3)
C = B.mean()

# print("A.grad :", A.grad)
# print("B.grad :", B.grad)
C.backward()
print("\n-- Backward --\n")
print("A.grad :", A.grad)
print("B.grad :", B.grad)

print("---", "retain grad: with retain_grad")
A = torch.Tensor([[1, 2], [3, 4]])
A.requires_grad_()

B = 5 * (A + 3)
B.retain_grad()  # <----- This line let us have access to gradient wrt. B after the backward pass
C = B.mean()


print("A.grad :", A.grad)
print("B.grad :", B.grad)
C.backward()
print("\n-- Backward --\n")
print("A.grad :", A.grad)
print("B.grad :", B.grad)

print("---", "gradient accumulation")
A = torch.Tensor([[1, 2], [3, 4]]).requires_grad_()

print("A.grad :", A.grad)

B = 5 * (A + 3)
C = B.mean()
C.backward()

print("\n-- Backward --\n")
print("A.grad :", A.grad)

B = 5 * (A + 3)
C = B.mean()
C.backward()

print("\n-- Backward --\n")
print("A.grad :", A.grad)

print("---", "under the hood: grad_fn")
A = torch.Tensor([[1, 2], [3, 4]])
A.requires_grad_()

B = 5 * (A + A)
C = B.mean()

print(A.grad_fn)
print(B.grad_fn)
print(C.grad_fn)

print("---", "under the hood: next_functions")
grad_fn = C.grad_fn
print(grad_fn)

grad_fn = grad_fn.next_functions
print(grad_fn)

grad_fn = grad_fn[0][0].next_functions
print(grad_fn)

grad_fn = grad_fn[0][0].next_functions
print(grad_fn)
