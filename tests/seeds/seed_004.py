import torch

# Seed 004: dtypes that can require grad, grad_fn / is_leaf, backward with incoming
# gradients and broadcasting, register_hook. A Jupyter notebook: `display` shows the repr.

display = print

print("---", "requires_grad on Double/Half tensors")
t2 = torch.DoubleTensor([1., 2.])  # dtype = torch.float16
t2.requires_grad=True
print(f't2 : {t2}')

t3 = torch.HalfTensor([1., 2.])  # dtype = torch.float64
t3.requires_grad=True
print(f't3 : {t3}')

print("---", "grad_fn and is_leaf")
# leaf nodes
x = torch.tensor(3., requires_grad=True)
a = torch.tensor(4., requires_grad=True)
b = torch.tensor(5., requires_grad=True)

y = a * x
# y is non-leaf
y.retain_grad()

z = y + b

print("Tensor x")
print(f'grad funtion = {x.grad_fn}')
print(f'is leaf = {x.is_leaf}')
print(x.requires_grad)

print("\nTensor y")
print(f'grad funtion = {y.grad_fn}')
print(f'is leaf = {y.is_leaf}')
print(y.requires_grad)

print("\nTensor z")
print(f'grad funtion = {z.grad_fn}')
print(f'is leaf = {z.is_leaf}')
print(z.requires_grad)

print("---", "backward")
z.backward()    # imagine pushing back to the leaf nodes

print("Tensor x")
print(f'grad funtion = {x.grad_fn}')

print("\nTensor a")
print(f'grad funtion = {a.grad_fn}')

print("\nTensor b")
print(f'grad funtion = {b.grad_fn}')

print("\nTensor y")
print(f'grad funtion = {y.grad_fn}')

print("\nTensor z")
print(f'grad funtion = {z.grad_fn}')

print('\n')
print('dz/dx:', x.grad)
print('dz/da:', a.grad)
print('dz/db:', b.grad)
print('(normally we don\'t compute grad of non-leaf nodes) dz/dy:', y.grad)

print("---", "non-scalar backward with a gradient of ones")
x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a

display(z)  # Broadcasting, see Ch. 02a
z.backward(torch.tensor([1., 1.])) # passing a gradient to backward.

print('dz/dx:', x.grad)
print('dz/da:', a.grad)

print("---", "non-scalar backward with a scaled gradient")
x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a

display(z)  # Broadcasting, see Ch. 02a
z.backward(torch.tensor([1000., 1000.])) # passing a gradient to backward.

print('dz/dx:', x.grad)
print('dz/da:', a.grad)

print("---", "mean to a scalar")
x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a
z = z.mean()
z.backward()

print('dz/dx:', x.grad)
print('dz/da:', a.grad)

print("---", "sum to a scalar")
x = torch.tensor(3., requires_grad=True)
a = torch.tensor([4.,2.], requires_grad=True)
z = x + a
z = z.sum()
z.backward()

print('dz/dx:', x.grad)
print('dz/da:', a.grad)

print("---", "register_hook")
v = torch.tensor([0., 0., 0.], requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)  # double the gradient
v.backward(torch.tensor([1., 2., 3.]))
display(v.grad)
h.remove() # removes the hook
