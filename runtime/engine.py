"""The backward engine: runs graph nodes in dependency order, without recursion.

One call (`run_backward`) is one graph task. It

1. finds the nodes reachable from the roots and, when `inputs` are given, which of them lie on
   a path to an input (only those run: PyTorch's exec_info);
2. counts, for each node that will receive gradients, how many incoming edges must deliver
   before it is ready;
3. pops ready nodes from a heap ordered like PyTorch's ready queue (newest node first;
   AccumulateGrad nodes, which share one priority, as soon as they are ready), and for each
   node runs, in order: the tensor hooks of its outputs, retain_grad, capture for `inputs`
   (before the hooks when the node itself must run, as PyTorch does), node pre-hooks, the
   derivative rule, node post-hooks; then frees its saved tensors unless `retain_graph`.

Pending gradients live in a per-call dict, never on the nodes, so concurrent or nested graph
tasks cannot see each other's partial sums. Without `create_graph` gradients flow as numpy
arrays (fast); with it they flow as Tensors and every rule records its own graph.
"""

import heapq

import numpy as np

from runtime import grad_mode
from runtime.function import _NEEDS_ONE, AccumulateGrad, SavedTensor, accumulate
from runtime.rules import numpy_ops

_state = grad_mode._state


def run_backward(roots, root_grads, retain_graph, create_graph, inputs=None,
                 accumulate=False):
    """Backpropagate from `roots`; returns captured gradients for `inputs` (or None).

    `root_grads` are numpy arrays (or Tensors when `create_graph`) matching the roots.
    With `inputs`, only the nodes on a path to an input run. With `accumulate=False`
    (autograd.grad) the gradients are captured at the inputs and returned, nothing touches
    `.grad`; with `accumulate=True` (backward(inputs=...)) the inputs' own nodes run too
    (AccumulateGrad for leaves, the grad_fn for others, whose .grad the caller retains).
    """
    from runtime import tensor_ops
    from runtime.autograd_meta import edge

    ops = tensor_ops if create_graph else numpy_ops
    root_edges = [edge(r) for r in roots]
    targets = None if inputs is None else [edge(t) for t in inputs]
    task = _GraphTask(root_edges, targets, accumulate)
    prev = grad_mode.snapshot()
    grad_mode.apply(create_graph, _state.inference)
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            task.run(root_edges, root_grads, ops, retain_graph)  # inf and nan, quietly
    finally:
        grad_mode.restore(prev)
    return task.captured



class _GraphTask:
    __slots__ = ("deps", "needed", "captures", "captured", "buffers", "heap")

    def __init__(self, root_edges, targets, accumulate):
        self.buffers = {}
        self.heap = []
        self.captures = None
        self.captured = None
        if targets is None:
            self.needed = None
            self.deps = _discover([e[0] for e in root_edges])
            return
        nodes = _reachable([e[0] for e in root_edges])
        target_nodes = {node for node, _ in targets}
        if accumulate:
            self.captures = {}
            self.needed = _needed(nodes, target_nodes) | (target_nodes & set(nodes))
        else:
            self.captures = {}
            for slot, (node, nr) in enumerate(targets):
                self.captures.setdefault(node, []).append((nr, slot))
            self.captured = [None] * len(targets)
            self.needed = _needed(nodes, target_nodes)
        self.deps = self._count_deps(nodes)

    def _visited(self, node):
        return self.needed is None or node in self.needed or node in self.captures

    def _count_deps(self, nodes):
        deps = {}
        for node in nodes:
            if self.needed is not None and node not in self.needed:
                continue
            for child, _ in node.next_functions:
                if child is not None and self._visited(child):
                    deps[child] = deps.get(child, 0) + 1
        return deps

    # -- execution ---------------------------------------------------------------------------
    def _deliver(self, node, nr, g, ops):
        """Add `g` to the pending cotangent of output `nr` of `node`. Single-output nodes
        keep the cotangent itself, multi-output nodes a list with one slot per output."""
        buffers = self.buffers
        if node._n_outputs == 1:
            old = buffers.get(node)
            buffers[node] = g if old is None else ops.add(old, g)
            return
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
        old = buf[nr]
        buf[nr] = g if old is None else ops.add(old, g)

    def run(self, root_edges, root_grads, ops, retain_graph):
        for (node, nr), g in zip(root_edges, root_grads):
            if self._visited(node):
                self._deliver(node, nr, g, ops)
        for node in self.buffers:
            if self.deps.get(node, 0) == 0:
                self._push(node)
        heap, deps, buffers = self.heap, self.deps, self.buffers
        plain = self.captures is None
        add = ops.add
        pop, push = heapq.heappop, heapq.heappush
        node = pop(heap)[1] if heap else None
        while node is not None:
            if plain and node.__class__ is AccumulateGrad and _bare_leaf(node):
                g = buffers.pop(node, None)
                if g is not None:
                    _accumulate_leaf(node, g, ops)
                g = None
                node = pop(heap)[1] if heap else None
                continue
            if plain and node._hooks is None and node.__class__ is not AccumulateGrad:
                g = buffers.pop(node, None)
                if g is None:
                    outs = (None,) * len(node.next_functions)
                elif node._rule is not None and node._fit is None and node._freed is not True:
                    outs = _run_rule(node, g, ops)  # Node._apply without the call overhead
                else:
                    outs = node._apply(g, ops)
                if not retain_graph and node._freed is False:
                    node._release()  # CopySlices releases the node it wraps too
            else:
                outs = self._process(node, ops, retain_graph)
                if outs is None:
                    node = pop(heap)[1] if heap else None
                    continue
            single = None
            for (child, nr), g in zip(node.next_functions, outs):
                if child is None or (not plain and not self._visited(child)):
                    continue
                if g is not None:
                    if child._n_outputs == 1:
                        old = buffers.get(child)
                        buffers[child] = g if old is None else add(old, g)
                    else:
                        self._deliver(child, nr, g, ops)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    if single is None and not heap:
                        single = child
                    else:
                        if single is not None:
                            push(heap, (-single._seq, single))
                            single = None
                        push(heap, (-child._seq, child))
            outs = g = None  # so AccumulateGrad can tell when it holds the only reference
            # A node that is the only one ready runs straight away: pushing it on an empty
            # heap and popping it again is what PyTorch does. Otherwise every ready node is
            # pushed in edge order and the heap decides (heapq sifts exactly like the
            # std::priority_queue of PyTorch's ready queue, so even ties among AccumulateGrad
            # nodes, which all share one priority, pop in PyTorch's order).
            node = single if single is not None else (pop(heap)[1] if heap else None)

    def _capture(self, captures, grads, ops):
        for nr, slot in captures:
            if grads[nr] is not None:
                old = self.captured[slot]
                self.captured[slot] = grads[nr] if old is None else ops.add(old, grads[nr])

    def _push(self, node):
        heapq.heappush(self.heap, (-node._seq, node))

    def _process(self, node, ops, retain_graph):
        """Run one ready node; returns the gradients for its next edges (None: not run)."""
        pending = self.buffers.pop(node, None)
        if node._n_outputs == 1:
            grads = [pending]
        else:
            grads = pending or [None] * node._n_outputs
        needed = self.needed is None or node in self.needed
        captures = self.captures.get(node) if self.captures else None
        # PyTorch captures a gradient before the tensor's hooks when the node also has to run
        # (another input lies below it: the hooks then run with the node), after them otherwise
        if captures is not None and needed:
            self._capture(captures, grads, ops)
        _run_tensor_hooks(node, grads, ops)
        if not needed:
            if captures is not None:
                self._capture(captures, grads, ops)
            return None
        hooks = node._hooks
        if hooks is not None and hooks.pre:
            grads = _run_pre_hooks(hooks.pre, grads, ops)
        if all(g is None for g in grads):
            outs = (None,) * len(node.next_functions)
        else:
            outs = node._apply(grads[0] if node._n_outputs == 1 else grads, ops)
            if type(node) is AccumulateGrad:
                _run_post_accumulate_hooks(node.variable)
        if hooks is not None and hooks.post:
            outs = _run_post_hooks(hooks.post, outs, grads, ops)
        if not retain_graph:
            node._release()
        return outs


def _bare_leaf(node):
    """An AccumulateGrad node with no hooks of its own, on a leaf with no tensor hooks and no
    post-accumulate hooks: it only adds the gradient into .grad."""
    if node._hooks is not None:
        return False
    m = node.variable._meta
    return m is None or (not m.hooks and not m.post_acc_hooks)


def _accumulate_leaf(node, g, ops):
    """AccumulateGrad's work for a _bare_leaf node (a frame of its own, so that the profiler
    reports it under the node's name)."""
    # references to g: run's, this frame's, accumulate's and _can_take's
    accumulate(node.variable, g, ops, 4)


def _run_rule(node, g, ops):
    """The common case of Node._apply (a rule, no dtype/shape fitting), kept flat because
    it runs once per node of every backward pass."""
    args = node._args
    if node._freed is False:
        saved = args
        args = []
        for a in saved:  # a loop, not a comprehension: that is a call of its own in 3.11
            args.append(a.unpack(ops, node) if a.__class__ is SavedTensor else a)
    nf = node.next_functions
    if len(nf) == 1:
        needs = _NEEDS_ONE
    elif len(nf) == 2:
        needs = (nf[0][0] is not None, nf[1][0] is not None)
    else:
        needs = tuple(e[0] is not None for e in nf)
    out = node._rule(ops, g, needs, *args)
    assert len(out) == len(nf), f"{node.name()}: rule arity mismatch"
    return out


def _reachable(roots):
    """Every node reachable from `roots`, in discovery order (iterative DFS)."""
    seen = {}
    stack = [n for n in roots if n is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = None
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                stack.append(child)
    return list(seen)


def _discover(roots):
    """Incoming-edge counts of every node reachable from `roots`, in one iterative pass."""
    deps = {}
    stack = []
    for root in roots:
        if root is not None and root not in deps:
            deps[root] = 0
            stack.append(root)
    get = deps.get
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                d = get(child)
                if d is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = d + 1
    return deps


def _needed(nodes, targets):
    """Nodes that lie on a path to a target node (the target itself excluded)."""
    needed = set()
    # Process children before parents: iterate to a fixed point in reverse discovery order,
    # repeating while anything changes (graphs are DAGs, so this terminates quickly).
    changed = True
    while changed:
        changed = False
        for node in reversed(nodes):
            if node in needed:
                continue
            for child, _ in node.next_functions:
                if child is not None and (child in needed or child in targets):
                    needed.add(node)
                    changed = True
                    break
    return needed


# -- hooks ----------------------------------------------------------------------------------------

def _as_tensor(g, ops):
    from runtime.tensor import Tensor

    if ops is numpy_ops:
        return Tensor._wrap(np.asarray(g))
    return g


def _from_tensor(t, ops):
    return t._data if ops is numpy_ops else t


def _hook_name(fn):
    return getattr(fn, "__name__", type(fn).__name__)


def _call_tensor_hook(fn, g, ops):
    """Run one tensor hook on gradient `g`; its result (if any) replaces the gradient."""
    if g is None:
        # an output or leaf that got no gradient still shows its hooks None, as PyTorch does
        if fn(None) is not None:
            raise RuntimeError(f"hook '{_hook_name(fn)}' returned a value for a gradient that "
                               f"is None (undefined); such a hook must return None")
        return None
    t = _as_tensor(g, ops)
    r = fn(t)
    if r is None:
        return _from_tensor(t, ops)
    if not hasattr(r, "_data"):
        raise TypeError(f"hook '{_hook_name(fn)}' returned '{type(r).__name__}'; a tensor "
                        f"hook must return a Tensor or None")
    if r.dtype is not t.dtype:
        raise RuntimeError(f"hook '{_hook_name(fn)}' returned a gradient of dtype {r.dtype}, but "
                           f"the gradient is {t.dtype}; a hook must keep the gradient's dtype")
    if tuple(r.shape) != tuple(t.shape):
        raise RuntimeError(f"hook '{_hook_name(fn)}' returned a gradient of shape "
                           f"{list(r.shape)}, but the tensor has shape {list(t.shape)}; a "
                           f"hook must keep the gradient's size")
    return _from_tensor(r, ops)


def _run_tensor_hooks(node, grads, ops):
    if type(node) is AccumulateGrad:
        m = node.variable._meta
        # (a leaf an in-place op has since given a history: its leaf hooks are gone, as
        # PyTorch reads them from the tensor when the node runs; the node then raises)
        if m is not None and m.hooks and node.variable._grad_fn is None:
            for fn in list(m.hooks.values()):
                grads[0] = _call_tensor_hook(fn, grads[0], ops)
        return
    hooks = node._hooks
    if hooks is None:
        return
    for nr, table in hooks.tensor_pre.items():
        for fn in list(table.values()):
            grads[nr] = _call_tensor_hook(fn, grads[nr], ops)
    for nr, ref in hooks.retain.items():
        t = ref()
        if t is not None and grads[nr] is not None:
            _retain(t, grads[nr], ops)


def _retain(t, g, ops):
    from runtime.tensor import Tensor

    if ops is numpy_ops:
        if t._grad is None:
            t._grad = Tensor._wrap(np.array(g, dtype=t._dtype.np))
        else:  # out of place, as PyTorch does for retained grads
            t._grad = Tensor._wrap((t._grad._data + g).astype(t._dtype.np, copy=False))
    else:  # recording (create_graph): the first retained grad is a recorded clone
        t._grad = g.clone() if t._grad is None else t._grad + g


def _run_pre_hooks(table, grads, ops):
    for fn in list(table.values()):
        r = fn(tuple(None if g is None else _as_tensor(g, ops) for g in grads))
        if r is not None:
            grads = list(_replacement(fn, r, len(grads), ops))
    return grads


def _run_post_hooks(table, outs, grads, ops):
    grad_outputs = tuple(None if g is None else _as_tensor(g, ops) for g in grads)
    for fn in list(table.values()):
        grad_inputs = tuple(None if g is None else _as_tensor(g, ops) for g in outs)
        r = fn(grad_inputs, grad_outputs)
        if r is not None:
            outs = _replacement(fn, r, len(outs), ops)
    return outs


def _replacement(fn, r, expected, ops):
    """A node hook's returned gradients, checked (a tuple of the node's arity) and converted."""
    if not isinstance(r, tuple):
        raise TypeError(f"a node hook must return a tuple or None, but "
                        f"'{_hook_name(fn)}' returned '{type(r).__name__}'")
    _check_arity(fn, r, expected)
    return tuple(None if x is None else _from_tensor(x, ops) for x in r)


def _check_arity(fn, r, expected):
    if len(r) != expected:
        raise RuntimeError(f"hook '{_hook_name(fn)}' returned {len(r)} values, but the node "
                           f"has {expected}; return one entry (or None) per gradient")


def _run_post_accumulate_hooks(variable):
    m = variable._meta
    if m is None or not m.post_acc_hooks:
        return
    for fn in list(m.post_acc_hooks.values()):
        result = fn(variable)
        if result is None:
            continue
        if not hasattr(result, "_data"):
            raise TypeError(f"a post-accumulate-grad hook must return None, but "
                            f"'{_hook_name(fn)}' returned '{type(result).__name__}'")
        raise RuntimeError("a post-accumulate-grad hook must return None; it may modify "
                           "the tensor or its .grad in place instead")


__all__ = ["run_backward", "accumulate"]
