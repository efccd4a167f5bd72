"""GradBench ba: bundle adjustment's residuals and their sparse Jacobian (SPEC.md section 3).

A data file gives one camera (11 parameters), one point, one weight and one feature, and the
counts n, m, p; the full problem repeats them: n cameras, m points, p observations, the i-th
seeing point i mod m from camera i mod n. `objective` computes every residual and returns
observation 0's with the count; `derivative` builds the whole 3p x (11n + 3m + p) CSR
Jacobian (31p entries) and returns GradBench's excerpt of it (the first 30 entries of each
array, then its last).

adcompile's residuals are a loop over the observations with scalar code for the projection,
as the reference does. The Jacobian's values are one gradient: of the sum of all 3p
residuals, each row with its parameters moved by entries of its own in a vector of 31p zeros
laid out as the values are, so the gradient in that vector is the values in CSR order; the
function writes the row pointers and column indices as it goes. JAX maps jacrev over the
observations (vmap); PyTorch runs two backward passes over per-observation copies.
"""

import functools
import glob
import math
import os
import types

import numpy as np

import adcompile as ac

from harness import adcompile, compile_seconds, njit, spec_error

NAME = "ba"
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                    "gradbench", "evals", "ba", "data")
SIZES = [dict(i=i) for i in range(1, 15)]
QUICK = [dict(i=1)]


def _path(i):
    (path,) = glob.glob(os.path.join(DATA, f"ba{i}_*.txt"))
    return path


def label(i):
    return os.path.splitext(os.path.basename(_path(i)))[0]


def problem_size(i):
    """p, observations."""
    return make_input(i)["p"]


def make_input(i):
    """The eval's message for data file i: the counts from its first line (not its name)
    and the 17 numbers of the one camera, point, weight and feature."""
    with open(_path(i)) as f:
        lines = [line.split() for line in f]
    n, m, p = (int(v) for v in lines[0])
    cam, x, w, feat = ([float(v) for v in line] for line in lines[1:5])
    return {"n": n, "m": m, "p": p, "cam": cam, "x": x, "w": w[0], "feat": feat}


def expand(inp):
    """The full problem: cameras (n x 11), points (m x 3), weights (p), features (p x 2) and
    each observation's camera and point (p x 2)."""
    n, m, p = int(inp["n"]), int(inp["m"]), int(inp["p"])
    cams = np.tile(np.array(inp["cam"], dtype=np.float64), (n, 1))
    points = np.tile(np.array(inp["x"], dtype=np.float64), (m, 1))
    weights = np.full(p, float(inp["w"]))
    features = np.tile(np.array(inp["feat"], dtype=np.float64), (p, 1))
    index = np.arange(p, dtype=np.int64)
    obs = np.stack((index % n, index % m), axis=1)
    return cams, points, weights, features, obs


def objective_output(reproj, w_err):
    p = len(w_err)
    return {"reproj_error": {"elements": reproj[0], "repeated": p},
            "w_err": {"element": w_err[0], "repeated": p}}


def excerpt(rows, cols, vals):
    """GradBench's Jacobian output: each CSR array's first 30 entries and its last."""
    return {name: np.concatenate((a[:30], a[-1:])) for name, a in
            (("rows", rows), ("cols", cols), ("vals", vals))}


# -- adcompile: the reference's loop over observations, scalar projection ------------------------


def rotate(r0, r1, r2, x0, x1, x2):
    """x rotated by the axis-angle vector r (Rodrigues' formula)."""
    theta2 = r0 * r0 + r1 * r1 + r2 * r2
    if theta2 != 0.0:
        theta = math.sqrt(theta2)
        cos = math.cos(theta)
        sin = math.sin(theta)
        k0 = r0 / theta
        k1 = r1 / theta
        k2 = r2 / theta
        along = (k0 * x0 + k1 * x1 + k2 * x2) * (1.0 - cos)
        y0 = x0 * cos + (k1 * x2 - k2 * x1) * sin + k0 * along
        y1 = x1 * cos + (k2 * x0 - k0 * x2) * sin + k1 * along
        y2 = x2 * cos + (k0 * x1 - k1 * x0) * sin + k2 * along
    else:
        y0 = x0 + r1 * x2 - r2 * x1
        y1 = x1 + r2 * x0 - r0 * x2
        y2 = x2 + r0 * x1 - r1 * x0
    return y0, y1, y2


def image(y0, y1, y2, f, c0, c1, k0, k1):
    """Where the camera-frame point y lands in the image: perspective division, radial
    distortion (k0, k1), focal length f, principal point (c0, c1)."""
    u0 = y0 / y2
    u1 = y1 / y2
    rho = u0 * u0 + u1 * u1
    distortion = 1.0 + k0 * rho + k1 * rho * rho
    return f * u0 * distortion + c0, f * u1 * distortion + c1


def project(cam, point):
    """Where the camera sees the point: rotation about its centre, then image(). (The camera's
    last five parameters are read after the rotation, which calls cos and sin: read before,
    they are kept on the stack across the calls, 7% of the objective's time.)"""
    y0, y1, y2 = rotate(cam[0], cam[1], cam[2],
                        point[0] - cam[3], point[1] - cam[4], point[2] - cam[5])
    return image(y0, y1, y2, cam[6], cam[7], cam[8], cam[9], cam[10])


def ba_objective(cams, points, weights, features, obs):
    p = weights.shape[0]
    reproj = np.empty((p, 2))
    w_err = np.empty(p)
    for i in range(p):
        proj0, proj1 = project(cams[obs[i, 0]], points[obs[i, 1]])
        reproj[i, 0] = weights[i] * (proj0 - features[i, 0])
        reproj[i, 1] = weights[i] * (proj1 - features[i, 1])
        w_err[i] = 1.0 - weights[i] * weights[i]
    return reproj, w_err


def shifted_projection(cam, point, shift):
    """project(cam + shift[0:11], point + shift[11:14])."""
    y0, y1, y2 = rotate(cam[0] + shift[0], cam[1] + shift[1], cam[2] + shift[2],
                        point[0] + shift[11] - (cam[3] + shift[3]),
                        point[1] + shift[12] - (cam[4] + shift[4]),
                        point[2] + shift[13] - (cam[5] + shift[5]))
    return image(y0, y1, y2, cam[6] + shift[6], cam[7] + shift[7], cam[8] + shift[8],
                 cam[9] + shift[9], cam[10] + shift[10])


def ba_rows(shift, cams, points, weights, features, obs, n, m, rows, cols):
    """The sum of all 3p residuals, each row's parameters moved by entries of its own in
    `shift` (31p zeros, laid out as the Jacobian's values): row 2i's camera, point and
    weight by shift[30i:30i + 15], row 2i + 1's by shift[30i + 15:30i + 30], weight error
    i's weight by shift[30p + i]. Its gradient in `shift` is therefore the CSR values. On
    its way over the observations it writes the Jacobian's structure, the row pointers
    (3p + 1) into `rows` and the column indices (31p) into `cols`."""
    p = weights.shape[0]
    weight_col = 11 * n + 3 * m
    total = 0.0
    for i in range(p):
        cam = cams[obs[i, 0]]
        point = points[obs[i, 1]]
        row = 30 * i
        proj0, _ = shifted_projection(cam, point, shift[row:row + 15])
        _, proj1 = shifted_projection(cam, point, shift[row + 15:row + 30])
        total += (weights[i] + shift[row + 14]) * (proj0 - features[i, 0])
        total += (weights[i] + shift[row + 29]) * (proj1 - features[i, 1])
        residual_structure(i, 11 * obs[i, 0], 11 * n + 3 * obs[i, 1], weight_col + i, rows, cols)
    for i in range(p):
        w = weights[i] + shift[30 * p + i]
        total += 1.0 - w * w
        rows[2 * p + i] = 30 * p + i
        cols[30 * p + i] = weight_col + i
    rows[3 * p] = 31 * p
    return total


def residual_structure(i, cam_col, point_col, weight_col, rows, cols):
    """Residual rows 2i and 2i + 1: where each starts in the values, and its 15 columns (11
    camera, 3 point, 1 weight)."""
    for row in range(30 * i, 30 * i + 30, 15):
        rows[row // 15] = row
        for t in range(11):
            cols[row + t] = cam_col + t
        for t in range(3):
            cols[row + 11 + t] = point_col + t
        cols[row + 14] = weight_col


class Jacobian:
    """The Jacobian in one compiled call: the gradient of ba_rows in its shift (zeros), which
    is the CSR values in order, while ba_rows writes the row pointers and column indices as
    it goes. The loop is compute-bound (two projections and their adjoints per observation),
    and the structure's 8 bytes per value ride along: written by a compiled loop of their own
    they cost about 1.4x the objective at ba11-14, in the same loop about 0.9x.
    The shift (zeros; read, never written) and the index arrays are allocated and zeroed
    once, when the Jacobian is made for p observations (the tool's prepare step; else when
    the problem's size is first seen), and the indices rewritten by every call (a fresh 16 MB
    each call costs its page faults again: 6.5 ms of system time per call at ba1;
    GradBench's C++ tools allocate their scratch buffers when they prepare, and reserve their
    output's vectors anew in each call). Zeroed by a write, as a C++ std::vector of that size
    is: np.zeros' pages are mapped only when first touched, which at ba14 (640 MB of
    scratch) cost the first call 40-170 ms, counted as the warm compile's. The values are a
    new array each call, whose memory
    the compiled code's cache of large blocks gives back warm; the accumulate pass stores
    each of its elements once, from registers, without filling it with zeros first.
    Perturbing each row's parameters, rather than differentiating per-observation copies of
    them, writes no copies and no separate gradients to be copied into the values: the
    version that did (gather the copies, a gradient for the x rows and one for the y rows,
    assemble) spent, in units of the objective's time at ba7, 0.6 gathering and 2.5
    assembling besides 2.7 per gradient."""

    def __init__(self, p=None):
        self.values = ac.grad(adcompile(ba_rows))
        self.shift = self.index = None
        if p is not None:
            self._scratch(p)

    def _scratch(self, p):
        self.shift = np.empty(31 * p)
        self.index = (np.empty(3 * p + 1, dtype=np.int64), np.empty(31 * p, dtype=np.int64))
        for array in (self.shift, *self.index):
            array.fill(0)

    def __call__(self, cams, points, weights, features, obs, n, m):
        p = obs.shape[0]
        if self.shift is None or len(self.shift) != 31 * p:
            self._scratch(p)
        vals = self.values(self.shift, cams, points, weights, features, obs, n, m, *self.index)
        return (*self.index, vals)


class Adcompile:
    def __init__(self, inp):
        self.args = (*expand(inp), int(inp["n"]), int(inp["m"]))
        self.primal = adcompile(ba_objective)
        self.primal(*self.args[:5])
        p = self.args[4].shape[0]
        self.compile_cold, self.compile_warm, self.jacobian = compile_seconds(
            lambda: Jacobian(p), self.args
        )

    def objective(self):
        return objective_output(*self.primal(*self.args[:5]))

    def derivative(self):
        return excerpt(*self.jacobian(*self.args))


# -- JAX: jacrev per observation, mapped with vmap; PyTorch: two backward passes -------------------


def _project_array(xp, cam, point):
    """project() on arrays of observations (cam: ... x 11, point: ... x 3), for JAX and
    PyTorch (xp is jax.numpy or torch); the theta = 0 branch is selected elementwise."""
    r = cam[..., 0:3]
    x = point - cam[..., 3:6]
    theta2 = xp.sum(r * r, -1, keepdims=True)
    nonzero = theta2 != 0.0
    theta = xp.sqrt(xp.where(nonzero, theta2, xp.ones_like(theta2)))
    k = r / theta
    cos, sin = xp.cos(theta), xp.sin(theta)
    along = xp.sum(k * x, -1, keepdims=True) * (1.0 - cos)
    rotated = x * cos + _cross(xp, k, x) * sin + k * along
    rotated = xp.where(nonzero, rotated, x + _cross(xp, r, x))
    u = rotated[..., 0:2] / rotated[..., 2:3]
    rho = xp.sum(u * u, -1, keepdims=True)
    distortion = 1.0 + cam[..., 9:10] * rho + cam[..., 10:11] * rho * rho
    return cam[..., 6:7] * u * distortion + cam[..., 7:9]


def _cross(xp, a, b):
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return xp.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), -1)


def _structure(obs, n, m):
    """The CSR row pointers and column indices (numpy; the same for every tool)."""
    p = obs.shape[0]
    per_obs = np.concatenate((11 * obs[:, :1] + np.arange(11),
                              11 * n + 3 * obs[:, 1:] + np.arange(3),
                              11 * n + 3 * m + np.arange(p)[:, None]), axis=1)
    cols = np.concatenate((np.tile(per_obs, (1, 2)).ravel(), 11 * n + 3 * m + np.arange(p)))
    rows = np.concatenate((np.arange(0, 30 * p + 1, 15), 30 * p + np.arange(1, p + 1)))
    return rows, cols


class Jax:
    def __init__(self, inp):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        n, m = int(inp["n"]), int(inp["m"])
        cams, points, weights, features, obs = expand(inp)
        self.args = tuple(jnp.asarray(a) for a in (cams, points, weights, features, obs))

        def residual(cam, point, weight, feature):
            return weight * (_project_array(jnp, cam, point) - feature)

        def objective(cams, points, weights, features, obs):
            reproj = jax.vmap(residual)(cams[obs[:, 0]], points[obs[:, 1]], weights, features)
            return reproj, 1.0 - weights * weights

        def jacobian(cams, points, weights, features, obs):
            blocks = jax.vmap(jax.jacrev(residual, argnums=(0, 1, 2)))(
                cams[obs[:, 0]], points[obs[:, 1]], weights, features)
            per_obs = jnp.concatenate((blocks[0], blocks[1], blocks[2][..., None]), axis=2)
            weight_err = jax.vmap(jax.grad(lambda w: 1.0 - w * w))(weights)
            vals = jnp.concatenate((per_obs.ravel(), weight_err))
            # the structure is computed from obs inside the timed call, as every tool's is
            p = obs.shape[0]
            per_col = jnp.concatenate((11 * obs[:, :1] + jnp.arange(11),
                                       11 * n + 3 * obs[:, 1:] + jnp.arange(3),
                                       11 * n + 3 * m + jnp.arange(p)[:, None]), axis=1)
            cols = jnp.concatenate((jnp.tile(per_col, (1, 2)).ravel(),
                                    11 * n + 3 * m + jnp.arange(p)))
            rows = jnp.concatenate((jnp.arange(0, 30 * p + 1, 15),
                                    30 * p + jnp.arange(1, p + 1)))
            return rows, cols, vals

        self.primal = jax.jit(objective)
        self.jacobian = jax.jit(jacobian)
        self.objective()
        self.derivative()

    def objective(self):
        reproj, w_err = self.primal(*self.args)
        return objective_output(np.asarray(reproj), np.asarray(w_err))

    def derivative(self):
        return excerpt(*(np.asarray(a) for a in self.jacobian(*self.args)))


class Torch:
    def __init__(self, inp):
        import torch

        self.torch = torch
        self.n, self.m = int(inp["n"]), int(inp["m"])
        arrays = expand(inp)
        self.cams, self.points, self.weights, self.features, self.obs = (
            torch.from_numpy(a) for a in arrays)

    def _residuals(self, cams, points, weights):
        projected = _project_array(self.torch, cams, points)
        return weights[:, None] * (projected - self.features)

    def objective(self):
        with self.torch.no_grad():
            reproj = self._residuals(self.cams[self.obs[:, 0]], self.points[self.obs[:, 1]],
                                     self.weights)
            w_err = 1.0 - self.weights * self.weights
        return objective_output(reproj.numpy(), w_err.numpy())

    def derivative(self):
        torch = self.torch
        own = [self.cams[self.obs[:, 0]].requires_grad_(),
               self.points[self.obs[:, 1]].requires_grad_(),
               self.weights.detach().requires_grad_()]
        reproj = self._residuals(*own)
        blocks = []
        for coordinate in (0, 1):
            seed = torch.zeros_like(reproj)
            seed[:, coordinate] = 1.0
            cam, point, weight = torch.autograd.grad(reproj, own, seed, retain_graph=True)
            blocks.append(torch.cat((cam, point, weight[:, None]), dim=1))
        (weight_err,) = torch.autograd.grad(torch.sum(1.0 - own[2] * own[2]), own[2])
        vals = torch.cat((torch.stack(blocks, dim=1).ravel(), weight_err))
        rows, cols = _structure(self.obs.numpy(), self.n, self.m)
        return excerpt(rows, cols, vals.numpy())


# -- numba: the objective's loop ------------------------------------------------------------------


class Numba:
    def __init__(self, inp):
        self.args = expand(inp)
        self.primal = _numba_objective()
        self.primal(*self.args)

    def objective(self):
        return objective_output(*self.primal(*self.args))


@functools.cache
def _numba_objective():
    """ba_objective for numba, which calls only compiled functions: the same code with
    `project`, `rotate` and `image` bound to numba's compilations of them."""
    project_nb = njit(_with_globals(project, rotate=njit(rotate), image=njit(image)))
    return njit(_with_globals(ba_objective, project=project_nb))


def _with_globals(fn, **names):
    return types.FunctionType(fn.__code__, {**fn.__globals__, **names}, fn.__name__)


def error(ours, ref):
    return spec_error(ours, ref)
