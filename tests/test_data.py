"""torch.utils.data, differential against PyTorch 2.13: the same manual_seed must give the
same batches in the same order (shuffle draws from the same stream), and the random stream
must be left in the same place afterwards."""

import numpy as np
import pytest
import torch

import adcompile
import adcompile.utils.data as adata


def _dataset(lib, n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) % 3
    return lib.utils.data.TensorDataset(lib.tensor(x), lib.tensor(y))


class Squares:
    """A user dataset of (float, int, dict) samples, for default_collate's branches."""

    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": self.lib.tensor([float(i), float(i * i)]), "i": i, "f": i / 2, "s": str(i)}


LOADERS = {
    "plain": lambda lib: lib.utils.data.DataLoader(_dataset(lib), batch_size=4),
    "shuffle": lambda lib: lib.utils.data.DataLoader(_dataset(lib), batch_size=4, shuffle=True),
    "shuffle_drop_last": lambda lib: lib.utils.data.DataLoader(_dataset(lib, 11), batch_size=3,
                                                               shuffle=True, drop_last=True),
    "batch_none": lambda lib: lib.utils.data.DataLoader(_dataset(lib, 3), batch_size=None),
    "dict_samples": lambda lib: lib.utils.data.DataLoader(Squares(lib), batch_size=3,
                                                          shuffle=True),
    "collate_fn": lambda lib: lib.utils.data.DataLoader(
        _dataset(lib), batch_size=3, collate_fn=lambda b: [len(b), b[0][1]]),
    "replacement": lambda lib: lib.utils.data.DataLoader(
        _dataset(lib), batch_size=5,
        sampler=lib.utils.data.RandomSampler(_dataset(lib), replacement=True, num_samples=40)),
}


def _plain(value):
    if hasattr(value, "numpy"):
        return ("tensor", str(value.dtype), value.numpy().tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_plain(v) for v in value])
    return value


def _epochs(lib, name, epochs=2):
    lib.manual_seed(3)
    loader = LOADERS[name](lib)
    batches = [_plain(b) for _ in range(epochs) for b in loader]
    return batches, len(loader), float(lib.rand(1)[0])


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_loader_matches_torch(name):
    assert _epochs(adcompile, name) == _epochs(torch, name)


def test_generator_argument_and_random_split():
    runs = []
    for lib, gen_cls in ((torch, torch.Generator), (adcompile, adcompile.random.Generator)):
        gen = gen_cls().manual_seed(5) if lib is torch else gen_cls().manual_seed(5)
        lib.manual_seed(1)
        loader = lib.utils.data.DataLoader(_dataset(lib), batch_size=4, shuffle=True,
                                           generator=gen)
        parts = lib.utils.data.random_split(_dataset(lib), [0.5, 0.3, 0.2])
        runs.append(([_plain(b) for b in loader], [list(p.indices) for p in parts],
                     float(lib.rand(1)[0])))
    assert runs[0] == runs[1]


def test_concat_and_subset():
    for lib in (torch, adcompile):
        both = _dataset(lib, 4) + _dataset(lib, 2)
        assert len(both) == 6
        assert _plain(both[5]) == _plain(_dataset(lib, 2)[1])
        assert _plain(lib.utils.data.Subset(both, [5, 0])[0]) == _plain(both[5])


def test_errors():
    for lib in (torch, adcompile):
        with pytest.raises(ValueError):
            lib.utils.data.DataLoader(_dataset(lib), sampler=[0, 1], shuffle=True)
        with pytest.raises(ValueError):
            lib.utils.data.DataLoader(_dataset(lib), batch_size=0)
        with pytest.raises(TypeError):
            next(iter(lib.utils.data.DataLoader([object(), object()], batch_size=2)))


def test_import_path():
    assert adata.DataLoader is adcompile.utils.data.DataLoader
