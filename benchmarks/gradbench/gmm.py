"""GradBench gmm: the log posterior of a Gaussian mixture with a Wishart prior (SPEC.md section 1).

The active arrays are alpha (K mixture logits), mu (K x D means), q (K x D logs of the
diagonals of Q_k) and l (K x D(D-1)/2 strictly-lower parts of Q_k, filled column by column);
the points x (N x D) are constant. `objective` is F = L + P, `derivative` its gradient as
GradBench's `{alpha, mu, q, l}` object.

The adcompile version is numpy code: Q_k is filled from l by loops, as the reference does,
and the likelihood is array code over the N points, one pass per component (no K x N x D
temporary). It writes Q_k (x_i - mu_k) as x_i Q_k^T - mu_k Q_k^T: the same function, whose
gradient in mu_k is then one vector-matrix product (-sum_i y_i_bar) Q_k instead of the N x D
product y_bar Q_k summed over the points, so the derivative makes two N x D x D products per
component where it made three (the objective still one). JAX and PyTorch compute all
components at once with einsum.
"""

import math

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, njit, spec_error

NAME = "gmm"
_D = [2, 10, 20, 32, 64]
_K = [5, 10, 25, 50, 100]
SIZES = sorted(
    (dict(d=d, k=k, n=1000) for d in _D for k in _K), key=lambda size: size["d"] * size["k"]
)
QUICK = [dict(d=2, k=5, n=1000)]


def problem_size(d, k, n):
    """n k d (d + 1) / 2, the multiply-adds of the likelihood."""
    return n * k * d * (d + 1) // 2


def make_input(d, k, n=1000, m=0, gamma=1.0):
    """GradBench's generator: a fresh default_rng(31337) per workload, drawn row by row."""
    rng = np.random.default_rng(seed=31337)
    x = [rng.normal(size=d).tolist() for _ in range(n)]
    alpha = rng.normal(size=k).tolist()
    mu = [rng.uniform(size=d).tolist() for _ in range(k)]
    q = [rng.normal(size=d).tolist() for _ in range(k)]
    l = [rng.normal(size=d * (d - 1) // 2).tolist() for _ in range(k)]
    return dict(d=d, k=k, n=n, x=x, m=m, gamma=gamma, alpha=alpha, mu=mu, q=q, l=l)


def _arrays(inp):
    """(alpha, mu, q, l, x) as float64 arrays; l is K x 0 when D = 1."""
    k, d = int(inp["k"]), int(inp["d"])
    alpha, mu, q, x = (np.array(inp[key], dtype=np.float64) for key in ("alpha", "mu", "q", "x"))
    l = np.array(inp["l"], dtype=np.float64).reshape(k, d * (d - 1) // 2)
    return alpha, mu, q, l, x


def _scalars(inp):
    """(gamma, m, the constant terms of F), the objective's scalar arguments."""
    d, k, n, m = int(inp["d"]), int(inp["k"]), int(inp["n"]), int(inp["m"])
    gamma = float(inp["gamma"])
    return gamma, float(m), _constant(d, k, n, m, gamma)


def log_gamma_d(d, a):
    """The multivariate log-gamma function log Gamma_D(a)."""
    return 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(a + 0.5 * (1 - j)) for j in range(1, d + 1)
    )


def _constant(d, k, n, m, gamma):
    """The terms of F that depend on no active array: -(ND/2) log 2pi and the Wishart
    normalisation of every component (computed in Python: compiled code has no lgamma)."""
    wishart_df = d + m + 1
    per_component = wishart_df * d * (math.log(gamma) - 0.5 * math.log(2.0))
    per_component -= log_gamma_d(d, 0.5 * wishart_df)
    return -0.5 * n * d * math.log(2.0 * math.pi) + k * per_component


def _column_order(d):
    """Row and column of each entry of l: below the diagonal, column by column."""
    rows = [r for c in range(d) for r in range(c + 1, d)]
    cols = [c for c in range(d) for r in range(c + 1, d)]
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)


# -- adcompile: numpy code; Q_k filled by loops ---------------------------------------------------


def build_q(q, l):
    """The lower-triangular factors Q_k (K x D x D): exp(q_k) on the diagonal, l_k below it,
    column by column."""
    k_count, d = q.shape
    qs = np.zeros((k_count, d, d))
    for k in range(k_count):
        p = 0
        for c in range(d):
            qs[k, c, c] = math.exp(q[k, c])
            for r in range(c + 1, d):
                qs[k, r, c] = l[k, p]
                p += 1
    return qs


def gmm_objective(alpha, mu, q, l, x, gamma, m, constant):
    n = x.shape[0]
    k_count = alpha.shape[0]
    qs = build_q(q, l)
    sum_q = np.sum(q, axis=1)
    beta = np.zeros((n, k_count))
    for k in range(k_count):
        q_t = qs[k].T
        y = x @ q_t - mu[k] @ q_t
        beta[:, k] = alpha[k] + sum_q[k] - 0.5 * np.sum(y * y, axis=1)
    top = np.max(beta, axis=1, keepdims=True)
    likelihood = np.sum(top[:, 0] + np.log(np.sum(np.exp(beta - top), axis=1)))
    top_alpha = np.max(alpha)
    likelihood -= n * (top_alpha + math.log(np.sum(np.exp(alpha - top_alpha))))
    frobenius = np.sum(np.exp(2.0 * q)) + np.sum(l * l)
    prior = -0.5 * gamma * gamma * frobenius + m * np.sum(q)
    return constant + likelihood + prior


class Adcompile:
    def __init__(self, inp):
        self.args = (*_arrays(inp), *_scalars(inp))
        self.compile_cold, self.compile_warm, self.gradient = compile_seconds(
            lambda: ac.grad(adcompile(gmm_objective), argnums=(0, 1, 2, 3)), self.args
        )
        self.primal = adcompile(gmm_objective)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)

    def derivative(self):
        alpha, mu, q, l = self.gradient(*self.args)
        return {"alpha": alpha, "mu": mu, "q": q, "l": l}


# -- JAX and PyTorch: every component at once -----------------------------------------------------


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp
        from jax.scipy.special import logsumexp

        jax.config.update("jax_enable_x64", True)
        d, k, n, m = int(inp["d"]), int(inp["k"]), int(inp["n"]), int(inp["m"])
        gamma = float(inp["gamma"])
        constant = _constant(d, k, n, m, gamma)
        rows, cols = _column_order(d)
        self.args = tuple(jnp.asarray(a) for a in _arrays(inp))

        def objective(alpha, mu, q, l, x):
            qs = jnp.zeros((k, d, d)).at[:, rows, cols].set(l)
            qs = qs + jnp.exp(q)[:, :, None] * jnp.eye(d)
            y = jnp.einsum("krc,nkc->nkr", qs, x[:, None, :] - mu[None, :, :])
            beta = alpha + jnp.sum(q, axis=1) - 0.5 * jnp.sum(y * y, axis=2)
            likelihood = jnp.sum(logsumexp(beta, axis=1)) - n * logsumexp(alpha)
            frobenius = jnp.sum(jnp.exp(2.0 * q)) + jnp.sum(l * l)
            return constant + likelihood - 0.5 * gamma**2 * frobenius + m * jnp.sum(q)

        self.primal = jax.jit(objective)
        self.gradient = jax.jit(jax.grad(objective, argnums=(0, 1, 2, 3)))
        self.objective()
        self.derivative()

    def objective(self):
        return float(self.primal(*self.args))

    def derivative(self):
        grads = [np.asarray(g) for g in self.gradient(*self.args)]
        return dict(zip(("alpha", "mu", "q", "l"), grads))


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        d, k, n, m = int(inp["d"]), int(inp["k"]), int(inp["n"]), int(inp["m"])
        self.sizes = (d, k, n, m, float(inp["gamma"]))
        self.constant = _constant(d, k, n, m, float(inp["gamma"]))
        self.rows, self.cols = (torch.from_numpy(i) for i in _column_order(d))
        self.args = tuple(torch.from_numpy(a) for a in _arrays(inp))

    def _objective(self, alpha, mu, q, l, x):
        torch = self.torch
        d, k, n, m, gamma = self.sizes
        qs = torch.zeros((k, d, d), dtype=torch.float64)
        qs[:, self.rows, self.cols] = l
        qs = qs + torch.diag_embed(torch.exp(q))
        y = torch.einsum("krc,nkc->nkr", qs, x[:, None, :] - mu[None, :, :])
        beta = alpha + torch.sum(q, dim=1) - 0.5 * torch.sum(y * y, dim=2)
        likelihood = torch.sum(torch.logsumexp(beta, dim=1)) - n * torch.logsumexp(alpha, 0)
        frobenius = torch.sum(torch.exp(2.0 * q)) + torch.sum(l * l)
        return self.constant + likelihood - 0.5 * gamma**2 * frobenius + m * torch.sum(q)

    def objective(self):
        return self._objective(*self.args).item()

    def derivative(self):
        active = [a.detach().requires_grad_() for a in self.args[:4]]
        value = self._objective(*active, self.args[4])
        grads = self.torch.autograd.grad(value, active)
        return dict(zip(("alpha", "mu", "q", "l"), (g.numpy() for g in grads)))


# -- numba: the reference's loops -----------------------------------------------------------------


def gmm_loops(alpha, mu, q, l, x, gamma, m, constant):
    n, d = x.shape
    k_count = alpha.shape[0]
    beta = np.empty(k_count)
    total = 0.0
    for i in range(n):
        for k in range(k_count):
            squares = 0.0
            for r in range(d):
                s = math.exp(q[k, r]) * (x[i, r] - mu[k, r])
                for c in range(r):
                    s += l[k, c * d - c * (c + 1) // 2 + r - c - 1] * (x[i, c] - mu[k, c])
                squares += s * s
            beta[k] = alpha[k] + np.sum(q[k]) - 0.5 * squares
        top = np.max(beta)
        total += top + math.log(np.sum(np.exp(beta - top)))
    top = np.max(alpha)
    total -= n * (top + math.log(np.sum(np.exp(alpha - top))))
    frobenius = np.sum(np.exp(2.0 * q)) + np.sum(l * l)
    return constant + total - 0.5 * gamma * gamma * frobenius + m * np.sum(q)


class Numba:
    def __init__(self, inp):
        self.args = (*_arrays(inp), *_scalars(inp))
        self.primal = njit(gmm_loops)
        self.primal(*self.args)

    def objective(self):
        return self.primal(*self.args)


def error(ours, ref):
    return spec_error(ours, ref)
