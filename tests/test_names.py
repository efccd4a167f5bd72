"""The public names of PyTorch's namespaces that adcompile claims, checked both ways.

`tests/claimed_names.txt` lists them, one per line, sorted: `torch.acos`, `Tensor.acos_`,
`torch.nn.functional.relu`, `torch.linalg.solve` ... Each must exist in PyTorch 2.13 (we claim
only real names) and in adcompile under the same path (`torch` -> `adcompile`, `Tensor` ->
`adcompile.Tensor`), so a name that disappears fails here. Add a line when you add a name;
`python tests/test_names.py --missing torch.linalg` prints the names of a namespace that
PyTorch has and we do not.
"""

import pathlib
import sys

import pytest
import torch

import adcompile

CLAIMED = pathlib.Path(__file__).with_name("claimed_names.txt")


def _claimed():
    return [line.strip() for line in CLAIMED.read_text().splitlines() if line.strip()]


def _resolve(root, path):
    obj = root
    for part in path:
        if not hasattr(obj, part):
            return None, False
        obj = getattr(obj, part)
    return obj, True


def _split(name):
    """(torch root, adcompile root, attribute path) for one claimed name."""
    head, *rest = name.split(".")
    if head == "Tensor":
        return torch.Tensor, adcompile.Tensor, rest
    assert head == "torch", f"claimed names start with torch. or Tensor., not {name!r}"
    return torch, adcompile, rest


def test_claimed_names_are_sorted_and_unique():
    names = _claimed()
    assert names == sorted(set(names)), "keep claimed_names.txt sorted, one name per line"


def test_every_claimed_name_exists_in_torch():
    missing = [n for n in _claimed() if not _resolve(_split(n)[0], _split(n)[2])[1]]
    assert not missing, f"not PyTorch 2.13 names: {missing}"


def test_every_claimed_name_exists_in_adcompile():
    missing = [n for n in _claimed() if not _resolve(_split(n)[1], _split(n)[2])[1]]
    assert not missing, f"claimed but missing from adcompile: {missing}"


@pytest.mark.parametrize("name", ["torch.acos", "Tensor.scatter_", "torch.take_along_dim"])
def test_the_check_can_fail(name):
    """A name removed from adcompile is reported (guards the resolver itself)."""
    torch_root, ours, path = _split(name)
    owner, _ = _resolve(ours, path[:-1])
    saved = getattr(owner, path[-1])
    try:
        delattr(owner, path[-1])
        assert not _resolve(ours, path)[1]
    finally:
        setattr(owner, path[-1], saved)
    assert _resolve(ours, path)[1]


def _missing(namespace):
    torch_ns, ours, path = _split(namespace)
    theirs = _resolve(torch_ns, path)[0]
    mine = _resolve(ours, path)[0]
    return sorted(n for n in dir(theirs) if not n.startswith("_")
                  and (mine is None or not hasattr(mine, n)))


if __name__ == "__main__" and sys.argv[1:2] == ["--missing"]:
    print("\n".join(_missing(sys.argv[2])))
