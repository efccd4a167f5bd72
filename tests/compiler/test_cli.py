"""The command line on the examples: `show` of each stage (golden files), `check` of the
examples and of a file with refused functions, `cache info|clear`, errors without tracebacks.

ADCOMPILE_UPDATE_GOLDEN=1 rewrites the golden files (review the diff)."""

import os
import pathlib
import subprocess
import sys

import pytest

from adcompile import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = pathlib.Path(__file__).parent / "golden"
DOT = ["examples/quickstart.py:dot", "--args", "np.linspace(0, 1, 5), np.arange(5.0)"]
GMM = ["examples/gmm.py:gmm_nll", "--args",
       "np.zeros(2), np.array([-1.0, 1.0]), np.zeros(2), np.linspace(-2, 2, 7)"]

SHOW = {
    "dot_ir": DOT + ["--stage", "ir"],
    "dot_python": DOT + ["--stage", "python"],
    "dot_grad": DOT + ["--stage", "grad"],
    "dot_jvp_x": DOT + ["--stage", "jvp", "--argnums", "0"],
    "gmm_ir": GMM,
}

BAD = '''import numpy as np
import adcompile as ac
from adcompile import adcompile as jit


@jit
def fine(x):
    return x * 2.0


@ac.adcompile(fastmath=True)
def comprehension(x):
    return sum([v for v in x])


def not_compiled(x):
    return [x]


@jit
def catches(x):
    try:
        return x
    except ValueError:
        return 0.0


raise SystemExit("adcompile check must not run the file")
'''


def _run(argv, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out.replace(str(ROOT), "<repo>"), err


def _golden(name, text):
    path = GOLDEN / f"cli_{name}.txt"
    if os.environ.get("ADCOMPILE_UPDATE_GOLDEN") or not path.exists():
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(SHOW))
def test_show_matches_golden(name, capsys, monkeypatch):
    status, out, err = _run(["show"] + SHOW[name], capsys, monkeypatch)
    assert (status, err) == (0, "")
    _golden(name, out)


def test_show_a_transform(capsys, monkeypatch):
    """A module-level value_and_grad object shows its derivative program (not golden: the
    reverse-mode output of this function is long and changes with the transform)."""
    argv = ["show", "examples/gmm.py:nll_and_grad"] + GMM[1:] + ["--stage", "python"]
    status, out, _ = _run(argv, capsys, monkeypatch)
    assert status == 0 and out.startswith("def gmm_nll_value_and_grad(logits, means, ")
    assert "# grad of: return -np.sum(" in out and "means_bar" in out


@pytest.mark.parametrize("stage", ["llvm", "asm"])
def test_show_native_code(stage, capsys, monkeypatch):
    status, out, _ = _run(["show"] + DOT + ["--stage", stage], capsys, monkeypatch)
    assert status == 0 and "adc.entry.dot" in out


def test_check_examples(capsys, monkeypatch):
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.py"))
    status, out, _ = _run(["check"] + files, capsys, monkeypatch)
    assert status == 0
    _golden("check_examples", out)


def test_check_reports_every_refused_function(tmp_path, capsys, monkeypatch):
    path = tmp_path / "bad.py"
    path.write_text(BAD)
    status, out, _ = _run(["check", str(path)], capsys, monkeypatch)
    assert status == 1
    _golden("check_bad", out.replace(str(path), "bad.py"))


def test_errors_are_messages(capsys, monkeypatch):
    for argv, message in [
            (["show", "examples/quickstart.py:dot", "--args", "np.ones(3), nope"],
             "cannot evaluate --args 'np.ones(3), nope': NameError"),
            (["show", "examples/quickstart.py:dot", "--args", "np.ones(3), 'a'"],
             "parameter 'y' got a str"),
            (["show", "examples/quickstart.py:nothing", "--args", "1.0"],
             "examples/quickstart.py has no 'nothing'"),
            (["show", "examples/missing.py:f", "--args", "1.0"], "no such file"),
            (["check", "examples/missing.py"], "no such file")]:
        status, out, err = _run(argv, capsys, monkeypatch)
        assert status == 1 and message in err and "Traceback" not in err


def test_cache_info_and_clear(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / "ab").mkdir(parents=True)
    (tmp_path / "cache" / "ab" / "ab12.o").write_bytes(b"x" * 1000)
    (tmp_path / "cache" / "ab" / "ab34.ir").write_bytes(b"y" * 500)
    (tmp_path / "cache" / "ab" / "notes.txt").write_text("not ours")
    status, out, _ = _run(["cache", "info"], capsys, monkeypatch)
    assert status == 0
    assert "object code:  1 entries" in out and "IR:           1 entries" in out
    assert "BLAS" not in out  # no copy of the BLAS yet
    (tmp_path / "cache" / "ab" / "ab56.so").write_bytes(b"z" * 2000)
    assert "BLAS copy:    1 entries" in _run(["cache", "info"], capsys, monkeypatch)[1]
    status, out, _ = _run(["cache", "clear"], capsys, monkeypatch)
    assert out.startswith("removed 3 entries (0.0 MB)")
    assert [p.name for p in (tmp_path / "cache" / "ab").iterdir()] == ["notes.txt"]
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    assert "off" in _run(["cache", "info"], capsys, monkeypatch)[1]


def test_python_dash_m():
    """The real entry point, in a new process: exit status and output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "adcompile", "show"] + DOT, cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (GOLDEN / "cli_dot_ir.txt").read_text()
    done = subprocess.run([sys.executable, "-m", "adcompile", "frobnicate"], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "invalid choice" in done.stderr
