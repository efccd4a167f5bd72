"""torch.utils.data: map-style datasets, samplers, default collation and the DataLoader.

Shuffling draws from the random stream exactly as PyTorch 2.13 does with num_workers=0: each
new iterator first draws a 64-bit base seed from the loader's generator; the RandomSampler, on
its first index, draws another 64-bit value, seeds a fresh Generator with it and takes randperm
from that. So the same manual_seed gives the same batches, and the same later random numbers.
Worker processes are not implemented (num_workers must be 0).
"""

import collections.abc
import math

import numpy as np

from runtime import random
from runtime.creation import tensor as _tensor
from runtime.ops import stack
from runtime.tensor import Tensor


def _random_int64(generator):
    """What `torch.empty((), dtype=torch.int64).random_(generator=g).item()` draws."""
    return int(random._gen(generator)._draw64(1)[0] % (1 << 63))


class Dataset:
    """A map-style dataset: subclasses define __getitem__ (and usually __len__)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of the tensors' rows at one index."""

    def __init__(self, *tensors):
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("TensorDataset: all tensors must have the same first dimension")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("index out of range for the concatenated dataset")
            index += len(self)
        which = int(np.searchsorted(self.cumulative_sizes, index, side="right"))
        start = 0 if which == 0 else int(self.cumulative_sizes[which - 1])
        return self.datasets[which][index - start]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping Subsets of the given lengths (or fractions summing to 1),
    drawing the permutation as PyTorch does."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _fractions_to_lengths(lengths, n)
    if sum(lengths) != n:
        raise ValueError("the lengths do not sum to the length of the dataset")
    perm = random.randperm(n, generator=generator).tolist()
    offsets = np.cumsum(lengths).tolist()
    return [Subset(dataset, perm[off - k:off]) for off, k in zip(offsets, lengths)]


def _fractions_to_lengths(fractions, n):
    lengths = [int(math.floor(n * f)) for f in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    return lengths


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation per pass (or draws with replacement), from PyTorch's stream."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples must be a positive integer, got {self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        gen = self.generator
        if gen is None:
            gen = random.Generator()
            gen.manual_seed(_random_int64(None))
        if self.replacement:
            yield from _with_replacement(n, self.num_samples, gen)
            return
        for _ in range(self.num_samples // n):
            yield from random.randperm(n, generator=gen).tolist()
        yield from random.randperm(n, generator=gen).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


def _with_replacement(n, count, gen):
    for _ in range(count // 32):
        yield from random.randint(0, n, (32,), generator=gen).tolist()
    yield from random.randint(0, n, (count % 32,), generator=gen).tolist()


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last must be a bool, got {drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _collate_tensors(batch):
    return stack(list(batch), 0)


def _collate_numpy(batch):
    return stack([_tensor(b) for b in batch], 0)


def _collate_mapping(batch):
    return {key: default_collate([d[key] for d in batch]) for key in batch[0]}


def _collate_sequence(batch):
    if len({len(b) for b in batch}) != 1:
        raise RuntimeError("default_collate: every sample in a batch must have the same length")
    columns = [default_collate(list(col)) for col in zip(*batch)]
    if isinstance(batch[0], tuple) and hasattr(batch[0], "_fields"):
        return type(batch[0])(*columns)
    return columns


_COLLATE = [
    (Tensor, _collate_tensors),
    (np.ndarray, _collate_numpy),
    (bool, lambda b: _tensor(b)),
    (float, lambda b: _tensor(b, dtype=_float64())),
    (int, lambda b: _tensor(b)),
    (str, lambda b: b),
    (bytes, lambda b: b),
    (collections.abc.Mapping, _collate_mapping),
    (collections.abc.Sequence, _collate_sequence),
]


def _float64():
    from runtime.dtypes import float64

    return float64


def default_collate(batch):
    """Stack a list of samples into a batch: tensors and arrays are stacked on a new first
    dimension, numbers become tensors, and tuples, lists and dicts are collated field by
    field (tuples and lists come back as lists, as in PyTorch)."""
    elem = batch[0]
    for kind, fn in _COLLATE:
        if isinstance(elem, kind):
            return fn(batch)
    raise TypeError(f"default_collate: cannot batch samples of type {type(elem).__name__}")


def default_convert(data):
    """What an unbatched loader (batch_size=None) applies to each sample: numpy arrays become
    tensors, containers are converted element by element, tuples come back as lists."""
    if isinstance(data, np.ndarray):
        return _tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):
        return [default_convert(d) for d in data]
    return data


class DataLoader:
    """Iterates a dataset in batches (num_workers=0 only)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers != 0:
            raise NotImplementedError("DataLoader: worker processes are not supported; use "
                                      "num_workers=0")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: give either sampler or shuffle=True, not both")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("DataLoader: batch_sampler excludes batch_size, shuffle, sampler "
                             "and drop_last")
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.drop_last = drop_last
        if sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = None if batch_sampler is None else batch_size
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn

    def __iter__(self):
        indices = iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)
        self._base_seed = _random_int64(self.generator)  # drawn as PyTorch does, then unused
        return self._batches(indices)

    def _batches(self, indices):
        for index in indices:
            if self.batch_sampler is None:
                yield self.collate_fn(self.dataset[index])
            else:
                yield self.collate_fn([self.dataset[i] for i in index])

    def __len__(self):
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


__all__ = ["Dataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert"]
