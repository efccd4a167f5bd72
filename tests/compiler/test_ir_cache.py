"""The on-disk IR cache: a warm start skips the front end and the derivative transforms, and
any change to what lowering reads (the function's source and its place in the file, globals,
closure cells, module attributes, inlined callees) makes it lower again."""

import copy
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import adcompile as ac
from adcompile import api
from adcompile.frontend.fingerprint import fingerprint
from adcompile.ir import interp, serialize
from adcompile.ir.printer import print_function
from tests.compiler.corpus import CASES

REPO = Path(__file__).resolve().parents[2]
PARAMS = [(fn, args) for fn, arg_sets in CASES for args in arg_sets[:1]]


@pytest.mark.parametrize("fn,args", PARAMS, ids=[f.__name__ for f, _ in PARAMS])
def test_encoding_round_trips(fn, args):
    spec = ac.adcompile(fn, backend="interp").specialize(*copy.deepcopy(args))
    programs = [spec.ir]
    active = tuple(api._differentiable_value(a) for a in args)
    if any(active):
        try:
            programs.append(api._vjp_spec(ac.adcompile(fn), args, active).ir)
        except (TypeError, ac.CompileError):  # no cotangent, or writes a differentiated array
            pass
    for ir in programs:
        back = serialize.decode(serialize.encode(ir))
        assert print_function(back) == print_function(ir)
        assert not {id(v) for v in back.params} & {id(v) for v in ir.params}
    expected = interp.run(spec.ir, copy.deepcopy(args))
    got = interp.run(serialize.decode(serialize.encode(spec.ir)), copy.deepcopy(args))
    assert repr(got) == repr(expected)


MODULE = '''
import math
import numpy as np

SCALE = 2.0


def helper(v):
    return SCALE * math.sin(v)


def other_helper(v):
    return SCALE * math.cos(v)


def work(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += helper(x[i]) * x[i]
    return s


class Limits:
    LOW = -0.5


def clipped(x):
    return max(x[0], Limits.LOW)


def make(c):
    def scaled(x):
        return c * x[0] * x[1]
    return scaled
'''


@pytest.fixture
def module(tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "irmod.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("irmod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def lowered(monkeypatch):
    """Counts the functions the front end and the transforms build."""
    calls = []
    for name in ("lower_function", "vjp_function", "jvp_function"):
        real = getattr(api, name)

        def counted(*args, real=real, name=name, **kwargs):
            calls.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(api, name, counted)
    return calls


X = np.array([0.3, -1.2, 2.0])
V = np.array([1.0, 0.5, -0.25])


def _everything(fn):
    """value, value_and_grad, grad and jvp of `fn` at X, from fresh compiled objects."""
    f = ac.adcompile(fn)
    return (f(X), ac.value_and_grad(f)(X), ac.grad(f)(X), ac.jvp(f, (X,), (V,)),
            ac.hvp(f, (X,), (V,)))


def test_warm_start_builds_nothing_and_gives_the_same_bits(module, lowered):
    cold = _everything(module.work)
    assert lowered.count("lower_function") == 1 and "vjp_function" in lowered
    built = len(lowered)
    warm = _everything(module.work)
    assert len(lowered) == built  # every program came from the IR cache
    assert repr(warm) == repr(cold)


def test_changed_global_is_lowered_again(module, lowered, monkeypatch):
    before = ac.grad(module.work)(X)
    monkeypatch.setattr(module, "SCALE", 3.0)
    after = ac.grad(module.work)(X)
    assert lowered.count("lower_function") == 2
    np.testing.assert_allclose(after, before * 1.5, rtol=1e-13)


def test_changed_callee_is_lowered_again(module, lowered, monkeypatch):
    before = ac.adcompile(module.work)(X)
    monkeypatch.setattr(module, "helper", module.other_helper)  # the same name, other code
    after = ac.adcompile(module.work)(X)
    assert lowered.count("lower_function") == 2
    assert after == pytest.approx(sum(2.0 * np.cos(v) * v for v in X), rel=1e-14)
    monkeypatch.undo()
    assert ac.adcompile(module.work)(X) == before
    assert lowered.count("lower_function") == 2  # the first entry is still there


def test_changed_module_attribute_is_lowered_again(module, lowered, monkeypatch):
    before = ac.adcompile(module.work)(X)
    monkeypatch.setattr(module.math, "sin", module.math.cos)  # a chain through a module
    after = ac.adcompile(module.work)(X)
    assert lowered.count("lower_function") == 2
    expected = sum(2.0 * np.cos(v) * v for v in X)
    assert after == pytest.approx(expected, rel=1e-14) and after != before


def test_changed_class_attribute_is_lowered_again(module, lowered, monkeypatch):
    x = np.array([-2.0, 1.0])
    assert ac.adcompile(module.clipped)(x) == -0.5
    monkeypatch.setattr(module.Limits, "LOW", -1.5)  # a chain through a class, not a module
    assert ac.adcompile(module.clipped)(x) == -1.5
    assert lowered.count("lower_function") == 2


def test_closure_cells_are_part_of_the_fingerprint(module, lowered):
    two, three = module.make(2.0), module.make(3.0)
    assert fingerprint(two) != fingerprint(three)
    assert fingerprint(two) == fingerprint(module.make(2.0))
    assert ac.adcompile(two)(X) == 2.0 * X[0] * X[1]
    assert ac.adcompile(three)(X) == 3.0 * X[0] * X[1]
    assert lowered.count("lower_function") == 2


def test_unfingerprintable_reads_are_not_cached(module, monkeypatch):
    monkeypatch.setattr(module, "SCALE", object())
    assert fingerprint(module.work) is None
    for _ in range(2):  # refused each time, from the front end
        with pytest.raises(ac.CompileError, match="SCALE"):
            ac.adcompile(module.work)(X)


def test_damaged_ir_entry_warns_and_rebuilds(module, lowered, tmp_path):
    expected = ac.adcompile(module.work)(X)
    (entry,) = (tmp_path / "cache").glob("*/*.ir")
    entry.write_bytes(entry.read_bytes()[:-7])
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert ac.adcompile(module.work)(X) == expected
    assert lowered.count("lower_function") == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ac.adcompile(module.work)(X) == expected  # rewritten whole


DRIVER = '''
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import adcompile as ac
from adcompile import api
built = []
real = api.lower_function
api.lower_function = lambda *a: built.append(1) or real(*a)
import editmod
x = np.array([0.5, 1.5])
try:
    out = float(ac.adcompile(editmod.work)(x))
except IndexError as e:
    out = str(e)
print(json.dumps({"out": out, "lowered": len(built)}))
'''


def _run(tmp_path, source):
    (tmp_path / "editmod.py").write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=str(REPO), ADCOMPILE_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_edited_source_files_are_lowered_again(tmp_path):
    """What a user does between runs: edit the file. The body, a callee and the line the
    function starts on all reach the IR (errors name lines), so each edit lowers again."""
    v1 = '''
        def inner(v):
            return v * v


        def work(x):
            return inner(x[0]) + x[1]
        '''
    assert _run(tmp_path, v1) == {"out": 1.75, "lowered": 1}
    assert _run(tmp_path, v1) == {"out": 1.75, "lowered": 0}
    callee = v1.replace("v * v", "v * v * v")
    assert _run(tmp_path, callee) == {"out": 1.625, "lowered": 1}
    bad = callee.replace("x[1]", "x[2]")
    first = _run(tmp_path, bad)
    assert first["lowered"] == 1 and "editmod.py:7" in first["out"]
    shifted = "\n\n\n" + bad
    moved = _run(tmp_path, shifted)
    assert moved["lowered"] == 1 and "editmod.py:10" in moved["out"]
    assert _run(tmp_path, shifted) == {"out": moved["out"], "lowered": 0}


def test_whole_but_unreadable_ir_entry_warns_and_rebuilds(module, lowered, tmp_path):
    """An entry with a good checksum that does not decode (another encoding) is not a crash."""
    from adcompile import cache

    expected = ac.adcompile(module.work)(X)
    (entry,) = (tmp_path / "cache").glob("*/*.ir")
    cache.store(entry.stem, "ir", b"not an encoding of IR")
    with pytest.warns(RuntimeWarning, match="unreadable"):
        assert ac.adcompile(module.work)(X) == expected
    assert lowered.count("lower_function") == 2
