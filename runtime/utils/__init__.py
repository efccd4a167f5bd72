"""torch.utils for the eager runtime: only `data` (datasets, samplers and the DataLoader)."""

from runtime.utils import data  # noqa: F401
