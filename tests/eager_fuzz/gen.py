"""Random autograd programs for the eager differential fuzzer.

A program is a list of `Stmt`s, each one line of Python over the name `torch` (run once with
PyTorch, once with adcompile). The generator is guided by PyTorch: each candidate statement
is run on PyTorch at once, so later statements pick operands of fitting shapes and dtypes;
a statement PyTorch refuses is kept now and then (error classes are compared too) and
otherwise drawn again. Templates are a table (`TEMPLATES`) of (name, weight, function); an op
adcompile lacks is left out of the table, so ops are fuzzed from the day they exist.
"""

import random
import warnings
from dataclasses import dataclass, field

import torch

import adcompile

PRELUDE = """\
log = []
def hook(name, scale=None):
    def fn(g):
        log.append(name)
        return None if scale is None else g * scale
    return fn
def node_hook(name):
    def fn(*grads):
        log.append(name)
    return fn
"""

SHAPES = [(), (3,), (4,), (2, 3), (1, 3), (2, 1), (3, 3), (3, 2), (2, 2, 3), (2, 1, 3), (0,),
          (2, 0), (1,), (3, 1)]
FLOAT_VALUES = [0.0, 1.0, -1.0, 0.5, 2.0, -2.5]
MAX_NUMEL = 256


@dataclass
class Stmt:
    tag: str  # the template (and op) that wrote it: the class of a failure found here
    source: str
    target: str = None  # the name whose value is observed after the statement
    mode: str = "full"  # "values": grad_fn names not compared (create_graph results)


@dataclass
class Program:
    seed: int
    stmts: list = field(default_factory=list)

    def render(self):
        return "\n".join(s.source for s in self.stmts)


def _holds(pred, t):
    """pred(t), False where PyTorch refuses to answer (a view whose base changed)."""
    try:
        return bool(pred(t))
    except Exception:  # noqa: BLE001
        return False


def has(name):
    """Whether adcompile has the op (a Tensor method or a torch-level function)."""
    return hasattr(adcompile.Tensor, name) or hasattr(adcompile, name)


class Gen:
    def __init__(self, seed, length):
        self.rng = random.Random(seed)
        self.program = Program(seed)
        self.length = length
        self.ns = {"torch": torch}
        exec(PRELUDE, self.ns)
        self.pool = []  # names bound to tensors in self.ns
        self.leaves = []
        self.count = 0

    # -- helpers ------------------------------------------------------------------------------
    def new_name(self):
        self.count += 1
        return f"v{self.count}"

    def value(self, name):
        return self.ns[name]

    def pick(self, pred=lambda t: True):
        names = [n for n in self.pool if _holds(pred, self.ns[n])]
        return self.rng.choice(names) if names else None

    def pick_float(self, pred=lambda t: True):
        return self.pick(lambda t: t.is_floating_point() and pred(t))

    def literal(self, shape, kind):
        r = self.rng
        if kind == "bool":
            make = lambda: r.random() < 0.5  # noqa: E731
        elif kind == "int":
            make = lambda: r.randint(-3, 5)  # noqa: E731
        else:
            make = lambda: (r.choice(FLOAT_VALUES) if r.random() < 0.15  # noqa: E731
                            else round(r.uniform(-3, 3), 2))

        def nest(dims):
            if not dims:
                return make()
            return [nest(dims[1:]) for _ in range(dims[0])]

        return repr(nest(list(shape)))

    def scalar(self):
        r = self.rng.random()
        if r < 0.5:
            return repr(round(self.rng.uniform(-3, 3), 2))
        if r < 0.85:
            return str(self.rng.randint(-2, 3))
        return self.rng.choice(["True", "False", "0.0", "-0.0"])

    def dim(self, t, extra=0):
        n = max(t.dim(), 1) + extra
        return self.rng.randrange(-n, n)

    # -- running ------------------------------------------------------------------------------
    def attempt(self, stmt, keep_error):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(stmt.source, self.ns)
            except Exception:  # noqa: BLE001 - PyTorch refused it
                if not keep_error:
                    return False
        value = self.ns.get(stmt.target)
        if isinstance(value, torch.Tensor) and value.numel() > MAX_NUMEL:
            return False  # shapes grow by repeat/expand/outer: keep programs small
        self.program.stmts.append(stmt)
        if stmt.target and isinstance(value, torch.Tensor) and stmt.target not in self.pool:
            self.pool.append(stmt.target)
        return True

    def step(self):
        names, weights = zip(*[(t[0], t[1]) for t in TEMPLATES])
        for _ in range(20):
            fn = TEMPLATES[self.rng.choices(range(len(names)), weights)[0]][2]
            stmt = fn(self)
            if stmt is not None and self.attempt(stmt, self.rng.random() < 0.08):
                return

    def run(self):
        for _ in range(self.rng.randint(1, 3)):
            self.attempt(make_leaf(self, float_only=True), False)
        while len(self.program.stmts) < self.length:
            self.step()
        finish(self)
        return self.program


def generate(seed, length=None):
    rng = random.Random(seed)
    return Gen(seed, length or rng.randint(4, 18)).run()


# == templates ================================================================================

def make_leaf(g, float_only=False):
    r = g.rng
    shape = r.choice(SHAPES)
    kind = "float" if float_only else r.choices(["float", "int", "bool"], [8, 1.5, 0.5])[0]
    name = g.new_name()
    args = ""
    if kind == "float":
        if r.random() < 0.2:
            args += ", dtype=torch.float64"
        if float_only or r.random() < 0.7:
            args += ", requires_grad=True"
            g.leaves.append(name)
    return Stmt(f"leaf.{kind}", f"{name} = torch.tensor({g.literal(shape, kind)}{args})", name)


def make_creation(g):
    r = g.rng
    shape = r.choice(SHAPES)
    name = g.new_name()
    fn = r.choice(["zeros", "ones", "full", "arange", "zeros_like", "ones_like", "empty_like"])
    if fn == "full":
        src = f"torch.full({shape!r}, {g.scalar()})"
    elif fn == "arange":
        src = f"torch.arange({r.randint(0, 6)}.0)"
    elif fn.endswith("_like"):
        x = g.pick()
        if x is None or fn == "empty_like":
            return None
        src = f"torch.{fn}({x})"
    else:
        src = f"torch.{fn}({shape!r})"
    return Stmt(f"create.{fn}", f"{name} = {src}", name)


UNARY = [n for n in ("exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "sign", "neg",
                     "sqrt", "floor", "ceil", "round", "reciprocal", "square", "rsqrt", "log1p",
                     "expm1", "trunc", "sinh", "cosh", "atan", "erf", "log2", "asin", "acos",
                     "tan", "frac", "deg2rad") if hasattr(adcompile.Tensor, n)]
# (not sgn: torch's sgn of a real tensor hands back an immutable ZeroTensor gradient, so a
# second backward into the same .grad raises there; tests/test_complex_products.py keeps that
# as a strict xfail)


def make_unary(g):
    x = g.pick()
    if x is None:
        return None
    op = g.rng.choice(UNARY)
    name = g.new_name()
    form = f"{x}.{op}()" if g.rng.random() < 0.7 else f"torch.{op}({x})"
    return Stmt(f"unary.{op}", f"{name} = {form}", name)


BINARY_OPS = ["+", "-", "*", "/", "**", "//", "%"]
BINARY_FNS = [n for n in ("maximum", "minimum", "add", "sub", "mul", "div", "pow", "atan2",
                          "fmod", "remainder", "hypot", "logaddexp") if has(n)]


def _operand_pair(g):
    """(x, y): y a tensor of a broadcastable shape, or a Python number."""
    x = g.pick()
    if x is None:
        return None, None
    if g.rng.random() < 0.35:
        return x, g.scalar()
    tx = g.value(x)
    y = g.pick(lambda t: _broadcastable(t.shape, tx.shape))
    return x, y if g.rng.random() < 0.9 else g.pick()


def _broadcastable(a, b):
    for m, n in zip(reversed(a), reversed(b)):
        if m != n and m != 1 and n != 1:
            return False
    return True


def make_binary(g):
    x, y = _operand_pair(g)
    if x is None or y is None:
        return None
    name = g.new_name()
    r = g.rng.random()
    if r < 0.55:
        op = g.rng.choice(BINARY_OPS)
        a, b = (y, x) if g.rng.random() < 0.2 and not y[0].isalpha() else (x, y)
        return Stmt(f"binary.{op}", f"{name} = {a} {op} {b}", name)
    if r < 0.65:
        alpha = g.rng.choice(["2", "0.5", "-1", "True", "0"])
        fn = g.rng.choice(["add", "sub"])
        return Stmt(f"binary.{fn}_alpha", f"{name} = torch.{fn}({x}, {y}, alpha={alpha})", name)
    fn = g.rng.choice(BINARY_FNS)
    if fn in ("maximum", "minimum", "atan2", "hypot", "logaddexp") and not y[0].isalpha():
        return None
    return Stmt(f"binary.{fn}", f"{name} = torch.{fn}({x}, {y})", name)


def make_compare(g):
    x, y = _operand_pair(g)
    if x is None or y is None:
        return None
    op = g.rng.choice(["<", "<=", ">", ">=", "==", "!="])
    name = g.new_name()
    return Stmt(f"compare.{op}", f"{name} = {x} {op} {y}", name)


def make_where(g):
    c = g.pick(lambda t: t.dtype == torch.bool)
    x, y = _operand_pair(g)
    if x is None or y is None:
        return None
    name = g.new_name()
    if c is None:
        c = f"({x} > 0)"
    if g.rng.random() < 0.3:
        return Stmt("where.masked_fill", f"{name} = {x}.masked_fill({c}, {g.scalar()})", name)
    return Stmt("where.where", f"{name} = torch.where({c}, {x}, {y})", name)


def make_clamp(g):
    x = g.pick()
    if x is None:
        return None
    r = g.rng
    lo, hi = sorted([round(r.uniform(-2, 2), 1), round(r.uniform(-2, 2), 1)])
    name = g.new_name()
    form = r.choice([f"clamp({lo}, {hi})", f"clamp(min={lo})", f"clamp(max={hi})",
                     f"clamp_min({lo})", f"clamp_max({hi})", f"clamp({hi}, {lo})"])
    if not has(form.split("(")[0]):
        return None
    return Stmt(f"clamp.{form.split('(')[0]}", f"{name} = {x}.{form}", name)


REDUCTIONS = [n for n in ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "norm", "var",
                          "std", "logsumexp", "amax", "amin", "all", "any", "nansum", "median")
              if hasattr(adcompile.Tensor, n)]


def make_reduction(g):
    x = g.pick()
    if x is None:
        return None
    r = g.rng
    op = r.choice(REDUCTIONS)
    t = g.value(x)
    name = g.new_name()
    if op == "logsumexp" or r.random() < 0.6:
        keep = ", keepdim=True" if r.random() < 0.3 else ""
        args = f"{g.dim(t)}{keep}"
        if op == "norm":
            args = f"dim={g.dim(t)}{keep}"
        src = f"{x}.{op}({args})"
        if op in ("max", "min") and r.random() < 0.7:
            src += r.choice(["[0]", "[1]", ".values", ".indices"])
    else:
        src = f"{x}.{op}()"
    if op == "median" and not src.endswith("median()") and 0 in t.stride():
        # PyTorch 2.13's median(dim) reads past the data of an expanded tensor (garbage
        # values, see `torch.arange(3.).expand(2, 3).median(0)`): no oracle there
        return None
    return Stmt(f"reduce.{op}", f"{name} = {src}", name)


def make_softmax(g):
    x = g.pick()
    if x is None:
        return None
    op = g.rng.choice(["softmax", "log_softmax", "cumsum", "cumprod"])
    name = g.new_name()
    return Stmt(f"scan.{op}", f"{name} = {x}.{op}({g.dim(g.value(x))})", name)


def make_view(g):
    x = g.pick()
    if x is None:
        return None
    r = g.rng
    t = g.value(x)
    n, nd = t.numel(), t.dim()
    choices = [
        ("view", f"view({_reshape_target(r, t.shape)})"),
        ("reshape", f"reshape({_reshape_target(r, t.shape)})"),
        ("flatten", "flatten()"),
        ("t", "t()"), ("transpose", f"transpose({g.dim(t)}, {g.dim(t)})"),
        ("permute", f"permute({_perm(r, nd)})"), ("squeeze", "squeeze()"),
        ("squeeze_dim", f"squeeze({g.dim(t)})"), ("unsqueeze", f"unsqueeze({g.dim(t, 1)})"),
        ("expand", f"expand({_expand_target(r, t.shape)})"), ("contiguous", "contiguous()"),
        ("clone", "clone()"), ("detach", "detach()"), ("mT", "mT"), ("T", "T"),
        ("narrow", f"narrow({g.dim(t)}, {r.randint(0, 2)}, {r.randint(0, 2)})"),
        ("select", f"select({g.dim(t)}, {r.randint(-2, 2)})"),
        ("flatten_range", f"flatten({g.dim(t)})"), ("repeat", f"repeat({_repeats(r, nd)})"),
        ("diag", "diag()"), ("flip", f"flip({g.dim(t)})"),
        ("view_as", f"view_as({g.pick(lambda u: u.numel() == n) or x})"),
    ]
    kind, form = r.choice([c for c in choices if has(c[0].split("_")[0]) or c[0] in ("T",)])
    name = g.new_name()
    return Stmt(f"view.{kind}", f"{name} = {x}.{form}", name)


def _reshape_target(r, shape):
    n = 1
    for s in shape:
        n *= s
    options = [(n,), (-1,), (1, n), (n, 1), (-1, 1)]
    for a in (2, 3):
        if n and n % a == 0:
            options += [(a, n // a), (a, -1), (n // a, 1, a)]
    target = r.choice(options)
    return ", ".join(map(str, target))


def _perm(r, nd):
    p = list(range(nd))
    r.shuffle(p)
    return ", ".join(map(str, p)) if p else ""


def _expand_target(r, shape):
    out = [s if s != 1 or r.random() < 0.5 else r.randint(2, 3) for s in shape]
    if r.random() < 0.3:
        out = [2] + out
    if r.random() < 0.3 and out:
        out[-1] = -1
    return ", ".join(map(str, out)) if out else "()"


def _repeats(r, nd):
    return ", ".join(str(r.randint(1, 2)) for _ in range(nd + r.randint(0, 1))) or "1"


def index_key(g, t):
    """A random key for tensor t: integers, slices, None, Ellipsis, lists and masks."""
    r = g.rng
    parts = []
    for size in t.shape[: r.randint(1, max(t.dim(), 1))]:
        c = r.random()
        if c < 0.3:
            parts.append(str(r.randint(-size, max(size - 1, 0)) if size else 0))
        elif c < 0.65:
            start = r.choice(["", str(r.randint(-3, 3))])
            stop = r.choice(["", str(r.randint(-3, 5))])
            step = r.choice(["", "", ":2", ":1"])
            parts.append(f"{start}:{stop}{step}")
        elif c < 0.85 and size:
            parts.append(repr([r.randrange(-size, size) for _ in range(r.randint(1, 3))]))
        elif c < 0.92:
            parts.append("None")
        else:
            parts.append("...")
    if not parts or r.random() < 0.1:
        parts = [r.choice(["...", "None", ":"])] + parts
    return ", ".join(parts)


def make_index(g):
    x = g.pick(lambda t: t.dim() > 0)
    if x is None:
        return None
    t = g.value(x)
    name = g.new_name()
    if g.rng.random() < 0.15:
        return Stmt("index.mask", f"{name} = {x}[{x} > 0]", name)
    key = index_key(g, t)
    return Stmt(f"index.{_key_kind(key)}", f"{name} = {x}[{key}]", name)


def _key_kind(key):
    return "advanced" if "[" in key else "basic"


def make_split(g):
    x = g.pick(lambda t: t.dim() > 0)
    if x is None:
        return None
    r = g.rng
    t = g.value(x)
    d = g.dim(t)
    form = r.choice([f"split({r.randint(1, 3)}, {d})", f"chunk({r.randint(1, 3)}, {d})",
                     f"unbind({d})", f"split([1, {t.shape[d] - 1}], {d})"])
    name = g.new_name()
    return Stmt(f"split.{form.split('(')[0]}", f"{name} = {x}.{form}[{r.randint(-1, 1)}]", name)


def make_join(g):
    x = g.pick()
    if x is None:
        return None
    t = g.value(x)
    others = [n for n in g.pool if g.value(n).shape == t.shape]
    parts = [x] + [g.rng.choice(others) for _ in range(g.rng.randint(0, 2))]
    fn = g.rng.choice(["cat", "stack"])
    name = g.new_name()
    d = g.dim(t, 1 if fn == "stack" else 0)
    return Stmt(f"join.{fn}", f"{name} = torch.{fn}([{', '.join(parts)}], {d})", name)


def make_matmul(g):
    r = g.rng
    x = g.pick_float(lambda t: t.dim() >= 1)
    if x is None:
        return None
    tx = g.value(x)
    k = tx.shape[-1]
    y = g.pick(lambda t: t.is_floating_point() and t.dim() >= 1 and
               (t.shape[0] if t.dim() == 1 else t.shape[-2]) == k)
    name = g.new_name()
    if y is None or r.random() < 0.3:
        shape = r.choice([(k,), (k, 2), (2, k, 3), (1, k, 2)])
        y = f"torch.tensor({g.literal(shape, 'float')}, dtype={tx.dtype})"
    fn = r.choice(["@", "matmul", "mm", "mv", "outer", "dot", "bmm"])
    if fn == "@":
        return Stmt("matmul.@", f"{name} = {x} @ {y}", name)
    if fn == "outer":
        return Stmt("matmul.outer", f"{name} = torch.outer({x}, {x})", name)
    return Stmt(f"matmul.{fn}", f"{name} = torch.{fn}({x}, {y})", name)


def make_ternary(g):
    x, y = _operand_pair(g)
    if x is None or y is None or not y[0].isalpha():
        return None
    z = g.pick(lambda t: _broadcastable(t.shape, g.value(x).shape))
    r = g.rng
    name = g.new_name()
    fn = r.choice(["addcmul", "addcdiv", "lerp", "lerp_tensor"])
    if fn == "lerp":
        return Stmt("ternary.lerp", f"{name} = torch.lerp({x}, {y}, {r.choice([0.25, 0.5, 0.75])})",
                    name)
    if fn == "lerp_tensor":
        return Stmt("ternary.lerp_tensor", f"{name} = torch.lerp({x}, {y}, {z})", name)
    value = r.choice(["", ", value=2", ", value=0.5"])
    return Stmt(f"ternary.{fn}", f"{name} = torch.{fn}({x}, {y}, {z}{value})", name)


def make_cast(g):
    x = g.pick()
    if x is None:
        return None
    form = g.rng.choice(["double()", "float()", "long()", "int()", "bool()", "to(torch.float64)",
                         "to(torch.float32)", "type_as(" + (g.pick() or x) + ")"])
    name = g.new_name()
    return Stmt(f"cast.{form.split('(')[0]}", f"{name} = {x}.{form}", name)


INPLACE = ["add_", "sub_", "mul_", "div_", "pow_", "clamp_", "relu_", "zero_", "fill_",
           "copy_", "exp_", "neg_", "abs_", "sigmoid_", "tanh_", "sqrt_", "floor_", "masked_fill_",
           "addcmul_", "lerp_"]


def make_inplace(g):
    x = g.pick(lambda t: not (t.is_leaf and t.requires_grad)) if g.rng.random() < 0.93 \
        else g.pick()
    if x is None:
        return None
    r = g.rng
    op = r.choice([n for n in INPLACE if hasattr(adcompile.Tensor, n)])
    y = g.pick(lambda t: _broadcastable(t.shape, g.value(x).shape)) or g.scalar()
    if r.random() < 0.2:
        y = x  # the operand is the target itself
    if r.random() < 0.3 and not y[0].isalpha():
        y = g.scalar()
    args = {"clamp_": "-1.0, 1.0", "fill_": g.scalar(), "masked_fill_": f"{x} > 0, 0.0",
            "addcmul_": f"{y}, {y}", "lerp_": f"{y}, 0.3",
            "add_": f"{y}" + r.choice(["", ", alpha=2"])}.get(op, "")
    if op in ("sub_", "mul_", "div_", "pow_", "copy_"):
        args = y
    return Stmt(f"inplace.{op}", f"{x}.{op}({args})", x)


def make_setitem(g):
    x = g.pick(lambda t: t.dim() > 0)
    if x is None:
        return None
    r = g.rng
    key = index_key(g, g.value(x))
    value = g.scalar() if r.random() < 0.5 else (g.pick() or "1.0")
    op = r.choice(["=", "=", "+=", "*="]) if value[0].isalpha() else "="
    return Stmt(f"setitem.{_key_kind(key)}{op}", f"{x}[{key}] {op} {value}", x)


def make_augassign(g):
    x, y = _operand_pair(g)
    if x is None or y is None:
        return None
    op = g.rng.choice(["+=", "-=", "*=", "/="])
    return Stmt(f"augassign.{op}", f"{x} {op} {y}", x)


def make_hook(g):
    # not on views: PyTorch 2.13 crashes (SIGSEGV) registering a hook on a view whose base
    # was modified in place
    x = g.pick_float(lambda t: t.requires_grad and t._base is None)
    if x is None:
        return None
    r = g.rng
    t = g.value(x)
    c = r.random()
    if c < 0.4:
        scale = r.choice(["", ", 2.0"])
        return Stmt("hook.tensor", f"{x}.register_hook(hook('{x}'{scale}))", x)
    if c < 0.6:
        return Stmt("hook.retain_grad", f"{x}.retain_grad()", x)
    if t.grad_fn is not None:
        kind = r.choice(["register_hook", "register_prehook"])
        return Stmt(f"hook.node_{kind}", f"{x}.grad_fn.{kind}(node_hook('{x}.{kind}'))", x)
    if t.is_leaf:
        return Stmt("hook.post_accumulate",
                    f"{x}.register_post_accumulate_grad_hook(node_hook('{x}.acc'))", x)
    return None


def make_detach(g):
    x = g.pick()
    if x is None:
        return None
    r = g.rng.random()
    name = g.new_name()
    if r < 0.5:
        return Stmt("detach.new_leaf", f"{name} = {x}.detach().requires_grad_()", name)
    if r < 0.7:
        return Stmt("detach.detach_", f"{x}.detach_()", x)
    if r < 0.85:
        return Stmt("detach.data", f"{name} = {x}.data", name)
    return Stmt("detach.requires_grad_", f"{x}.requires_grad_()", x)


def make_grad_once(g):
    """A mid-program autograd.grad (retain_graph, so the program goes on)."""
    x = g.pick_float(lambda t: t.requires_grad)
    leaf = g.pick(lambda t: t.is_leaf and t.requires_grad)
    if x is None or leaf is None:
        return None
    name = g.new_name()
    return Stmt("grad.mid", f"{name} = torch.autograd.grad({x}.sum(), [{leaf}], "
                f"retain_graph=True, allow_unused=True)[0]", name, "values")


TEMPLATES = [
    ("leaf", 3, make_leaf), ("creation", 1, make_creation), ("unary", 8, make_unary),
    ("binary", 8, make_binary), ("compare", 2, make_compare), ("where", 2, make_where),
    ("clamp", 1.5, make_clamp), ("reduction", 5, make_reduction), ("scan", 2, make_softmax),
    ("view", 7, make_view), ("index", 5, make_index), ("split", 2, make_split),
    ("join", 2, make_join), ("matmul", 3, make_matmul), ("ternary", 1.5, make_ternary),
    ("cast", 1.5, make_cast), ("inplace", 5, make_inplace), ("setitem", 3, make_setitem),
    ("augassign", 2, make_augassign), ("hook", 3, make_hook), ("detach", 1.5, make_detach),
    ("grad", 1, make_grad_once),
]


# == the end of a program: backward and what it leaves =========================================

def finish(g):
    r = g.rng
    x = g.pick_float(lambda t: t.requires_grad)
    if x is None:
        return
    t = g.value(x)
    weights = f"torch.tensor({g.literal(tuple(t.shape), 'float')}, dtype={t.dtype})"
    loss = r.choice([f"{x}.sum()", f"({x} * {weights}).sum()", f"{x}.pow(2).mean()"])
    kind = r.choices(["backward", "twice", "grad", "create_graph"], [6, 1, 2, 1.5])[0]
    leaves = [n for n in g.pool if _holds(lambda t: t.is_leaf and t.requires_grad, g.value(n))]
    if kind == "backward":
        g.attempt(Stmt("backward.backward", f"{loss}.backward()"), True)
    elif kind == "twice":
        g.attempt(Stmt("backward.retain", f"loss = {loss}; loss.backward(retain_graph=True)"),
                  True)
        g.attempt(Stmt("backward.second", "loss.backward()"), True)
    elif kind == "grad" and leaves:
        g.attempt(Stmt("backward.grad", f"grads = torch.autograd.grad({loss}, [{', '.join(leaves)}],"
                       f" allow_unused=True)", "grads", "values"), True)
    elif leaves:
        leaf = r.choice(leaves)
        g.attempt(Stmt("backward.create_graph", f"(gg,) = torch.autograd.grad({loss}, [{leaf}], "
                       f"create_graph=True)", "gg", "values"), True)
        g.attempt(Stmt("backward.double", "gg.sum().backward() if gg.requires_grad else None",
                       "gg", "values"), True)
    for n in g.pool:
        g.program.stmts.append(Stmt("grads.grad", f"_g = {n}.grad", "_g", "values"))
    g.program.stmts.append(Stmt("grads.hook_order", "_log = list(log)", "_log"))
