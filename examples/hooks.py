"""Tensor hooks, node hooks, post-accumulate hooks and retain_grad, in the order they fire.

Run: python examples/hooks.py
"""

import adcompile as torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
h = w * 3
out = (h * h).sum()

h.retain_grad()
h.register_hook(lambda g: print("tensor hook on h sees", g) or g * 10)
out.grad_fn.register_prehook(lambda grads: print("SumBackward0 pre-hook:", grads))
out.grad_fn.register_hook(lambda gin, gout: print("SumBackward0 post-hook:", gin, gout))
w.register_hook(lambda g: print("leaf hook on w sees", g))
w.register_post_accumulate_grad_hook(lambda t: print("w.grad after accumulation:", t.grad))

out.backward()
print("h.grad (retained, after the x10 hook):", h.grad)
print("w.grad:", w.grad)
