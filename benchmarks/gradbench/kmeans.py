"""GradBench kmeans: the k-means cost and the Newton direction of its centroids.

cost(P, C) = sum_i min_j |P_i - C_j|^2 over the n points P and the k centroids C
(SPEC.md section 8). `objective` is the cost (GradBench's `cost`); `derivative` is J / H
elementwise as a k x d float64 array (`dir`), J the gradient of the cost with respect to C
and H the diagonal of its Hessian, got as the Hessian times a matrix of ones (exact: the
Hessian is diagonal) by forward mode over the gradient, as GradBench's JAX tool does.

adcompile's cost loops over the points, each against all centroids at once; JAX and
PyTorch take every point against every centroid at once; numba runs the reference's loops.

Run as a script to check adcompile against JAX and PyTorch at the quick size, or at another:
python benchmarks/gradbench/kmeans.py [k=100 n=10000 d=16]
"""

import itertools
import sys

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, spec_error

NAME = "kmeans"
_K = [10, 100, 1000]
_N = [1000, 10000]
_D = [8, 16]
WORKLOADS = sorted(itertools.product(_K, _N, _D), key=lambda w: w[0] * w[1] * w[2])
# the two largest (k = 1000, n = 10000) are left out: each takes about three minutes here,
# adcompile's Newton direction 9 s and 28 s with 11 GB of tapes, PyTorch's 12 s and 24 s
SIZES = [dict(k=k, n=n, d=d) for k, n, d in WORKLOADS[:-2]]
QUICK = [dict(k=10, n=1000, d=8)]


def make_input(k, n, d):
    """GradBench's input for one workload: the points are the workload's draw of rand(n, d)
    from the one legacy stream seeded with 31337 that all default workloads share, in their
    order (a size outside the defaults gets the stream's first draw); the centroids are the
    last k points."""
    stream = np.random.RandomState(31337)
    for size in WORKLOADS:
        points = stream.rand(size[1], size[2])
        if size == (k, n, d):
            break
    else:
        points = np.random.RandomState(31337).rand(n, d)
    return {"points": points.tolist(), "centroids": points[-k:].tolist(),
            "min_runs": 1, "min_seconds": 1}


# -- adcompile: a loop over the points, each against every centroid at once -------------------


def kmeans_cost(points, centroids):
    cost = 0.0
    for i in range(points.shape[0]):
        cost += np.min(np.sum((centroids - points[i]) ** 2, axis=1))
    return cost


class Adcompile:
    def __init__(self, inp):
        self.points = np.array(inp["points"], dtype=np.float64)
        self.centroids = np.array(inp["centroids"], dtype=np.float64)
        self.ones = np.ones_like(self.centroids)
        self.compile_cold, self.compile_warm, self.direction = compile_seconds(
            lambda: newton_direction(adcompile(kmeans_cost)),
            (self.points, self.centroids, self.ones),
        )
        self.primal = adcompile(kmeans_cost)
        self.primal(self.points, self.centroids)

    def objective(self):
        return self.primal(self.points, self.centroids)

    def derivative(self):
        return self.direction(self.points, self.centroids, self.ones)


def newton_direction(cost):
    """A function of (points, centroids, ones) giving J / H: forward mode over the program
    of cost's gradient J pushes `ones` through it, which gives H with J."""
    gradient = ac.grad(cost, argnums=1)

    def direction(points, centroids, ones):
        j, h = ac.jvp(gradient, (points, centroids), (None, ones))
        return j / h

    return direction


# -- JAX and PyTorch: every point against every centroid at once ------------------------------


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        self.points = jnp.array(inp["points"], dtype=jnp.float64)
        self.centroids = jnp.array(inp["centroids"], dtype=jnp.float64)

        def cost(points, centroids):
            distances = jnp.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
            return jnp.sum(jnp.min(distances, axis=1))

        def direction(points, centroids):
            gradient = jax.grad(cost, argnums=1)
            j, h = jax.jvp(lambda c: gradient(points, c), (centroids,),
                           (jnp.ones_like(centroids),))
            return j / h

        self.cost = jax.jit(cost)
        self.direction = jax.jit(direction)
        self.objective()
        self.derivative()

    def objective(self):
        return float(self.cost(self.points, self.centroids))

    def derivative(self):
        return np.asarray(self.direction(self.points, self.centroids))


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        self.points = torch.tensor(inp["points"], dtype=torch.float64)
        self.centroids = torch.tensor(inp["centroids"], dtype=torch.float64)

    def cost(self, centroids):
        distances = ((self.points[:, None, :] - centroids[None, :, :]) ** 2).sum(2)
        return distances.min(1).values.sum()

    def objective(self):
        return self.cost(self.centroids).item()

    def derivative(self):
        c = self.centroids.detach().requires_grad_()
        (j,) = self.torch.autograd.grad(self.cost(c), c, create_graph=True)
        (h,) = self.torch.autograd.grad(j, c, self.torch.ones_like(c))
        return (j / h).detach().numpy()


# -- numba: the reference's loops -----------------------------------------------------------


def kmeans_cost_loops(points, centroids):
    cost = 0.0
    for i in range(points.shape[0]):
        best = np.inf
        for j in range(centroids.shape[0]):
            distance = 0.0
            for m in range(points.shape[1]):
                difference = points[i, m] - centroids[j, m]
                distance += difference * difference
            best = min(best, distance)
        cost += best
    return cost


class Numba:
    def __init__(self, inp):
        import numba

        self.args = (np.array(inp["points"], dtype=np.float64),
                     np.array(inp["centroids"], dtype=np.float64))
        self.primal = numba.njit(kmeans_cost_loops)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)


def error(ours, ref):
    return spec_error(ours, ref)


if __name__ == "__main__":
    import run  # sets one thread for JAX before it loads

    given = run.script(sys.modules[__name__])
