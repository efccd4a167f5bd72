"""A one-dimensional Gaussian mixture: its negative log-likelihood, compiled, and a data set
made in shards (used by examples/dask_gmm.py and benchmarks/distributed.py).

The parameters are unconstrained: mixture weights as logits, means, and log standard
deviations. A data set's loss and gradient are the sums of its shards', a shard's those of its
blocks (shard_nll_and_grad, what a worker runs per shard: a compiled call per cache-sized block).
"""

import math

import numpy as np

import adcompile as ac
from adcompile import adcompile

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@adcompile
def gmm_nll(logits, means, log_sigmas, x):
    """-sum_i log sum_k w_k N(x_i | mean_k, sigma_k), with w = softmax(logits)."""
    top = np.max(logits)
    log_w = logits - top - np.log(np.sum(np.exp(logits - top)))
    z = (x[:, None] - means[None, :]) * np.exp(-log_sigmas)[None, :]
    log_p = log_w - log_sigmas - LOG_SQRT_2PI - 0.5 * z * z
    m = np.max(log_p, axis=1)
    return -np.sum(m + np.log(np.sum(np.exp(log_p - m[:, None]), axis=1)))


# the value and the gradient in all three parameters, of the points it is given
nll_and_grad = ac.value_and_grad(gmm_nll, argnums=(0, 1, 2))

# Points per compiled call in shard_nll_and_grad. A call mallocs its temporaries (arrays of
# points x components) afresh; at its peak about 200 bytes per point are live (glibc's
# mallinfo2, 4 components), so 4096 points take some 0.8 MiB: inside a core's L2 (2 MiB on
# the Xeons benchmarks/distributed.py ran on), with room for the other data. A whole shard of
# 5e5 points in one call instead streams 90 MiB through the shared L3 and memory per call:
# a third more CPU on one core, and more again while another process does the same (4-6% under
# load, 23% idle; blocks: none). The Python call costs about 5 us, 1% of a block's work.
BLOCK = 4096


def shard_nll_and_grad(logits, means, log_sigmas, x, block=BLOCK):
    """nll_and_grad of a shard, one compiled call per `block` points, summed in order (the
    bits depend on the block size, not on the process that computes it)."""
    starts = range(0, max(len(x), 1), block)
    return add_up([nll_and_grad(logits, means, log_sigmas, x[i:i + block]) for i in starts])


def add_up(results):
    """Sum of (value, grads) pairs in their order (the order fixes the bits)."""
    value, grads = results[0]
    grads = [g.copy() for g in grads]
    for v, gs in results[1:]:
        value += v
        for total, g in zip(grads, gs):
            total += g
    return value, grads

TRUE_MEANS = np.array([-4.0, -1.0, 0.5, 3.0])
TRUE_SIGMAS = np.array([0.7, 0.4, 1.0, 0.8])
TRUE_WEIGHTS = np.array([0.2, 0.3, 0.35, 0.15])


def shard(seed, size):
    """One shard of the data set, drawn from the true mixture with its own seed (so a worker
    can make its shard itself, and any process can make the same one again)."""
    rng = np.random.default_rng(seed)
    component = rng.choice(len(TRUE_WEIGHTS), size=size, p=TRUE_WEIGHTS)
    return rng.normal(TRUE_MEANS[component], TRUE_SIGMAS[component])


def initial_parameters(k=4):
    return np.zeros(k), np.linspace(-2.0, 2.0, k), np.zeros(k)
