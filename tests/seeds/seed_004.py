# Seed 004: dtypes that can require grad, grad_fn / is_leaf, backward with gradients and
# broadcasting, register_hook.
import torch

display = print

print("---", "requires_grad dtypes")
t2 = torch.DoubleTensor([1., 2.])
t2.requires_grad=True
print(f't2 : {t2}')
t3 = torch.HalfTensor([1., 2.])
t3.requires_grad=True
print(f't3 : {t3}')
try:
    t4 = torch.LongTensor([1, 2])
    t4.requires_grad = True
except Exception as e:
    print(type(e).__name__)

print("---", "grad_fn and is_leaf")
x = torch.tensor(3., requires_grad=True)
a = torch.tensor(4., requires_grad=True)
b = torch.tensor(5., requires_grad=True)
y = a * x
y.retain_grad()
z = y + b
print("Tensor x")
print(f'grad funtion = {x.grad_fn}')
print(f'is leaf = {x.is_leaf}')
print(x.requires_grad)
print("\nTensor y")
print(f'grad funtion = {type(y.grad_fn).__name__}')
print(f'is leaf = {y.is_leaf}')
print(y.requires_grad)
print("\nTensor z")
print(f'grad funtion = {type(z.grad_fn).__name__}')
print(f'is leaf = {z.is_leaf}')
print(z.requires_grad)

print("---", "backward")
z.backward()
print("Tensor x")
print(f'grad funtion = {x.grad_fn}')
print("\nTensor a")
print(f'grad funtion = {a.grad_fn}')
print("\nTensor b")
print(f'grad funtion = {b.grad_fn}')
print("\nTensor y")
print(f'grad funtion = {type(y.grad_fn).__name__}')
print("\nTensor z")
print(f'grad funtion = {type(z.grad_fn).__name__}')
print('\n')
print('dz/dx:', x.grad)
print('dz/da:', a.grad)
print('dz/db:', b.grad)
print('(normally we don\'t compute grad of non-leaf nodes) dz/dy:', y.grad)

print("---", "non-scalar backward")
try:
    x = torch.tensor(3., requires_grad=True)
    a = torch.tensor([4.,2.], requires_grad=True)
    (x + a).backward()
except Exception as e:
    print(type(e).__name__)

x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a
display(z)
z.backward(torch.tensor([1., 1.]))
print('dz/dx:', x.grad)
print('dz/da:', a.grad)

x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a
display(z)
z.backward(torch.tensor([1000., 1000.]))
print('dz/dx:', x.grad)
print('dz/da:', a.grad)

x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a
z = z.mean()
z.backward()
print('dz/dx:', x.grad)
print('dz/da:', a.grad)

x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a
z = z.sum()
z.backward()
print('dz/dx:', x.grad)
print('dz/da:', a.grad)

print("---", "register_hook")
v = torch.tensor([0., 0., 0.], requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)
v.backward(torch.tensor([1., 2., 3.]))
display(v.grad)
h.remove()
v.grad = None
v.backward(torch.tensor([1., 2., 3.]))
display(v.grad)
