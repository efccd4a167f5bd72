"""`adcompile.utils` mirrors `torch.utils`, so `import adcompile.utils.data` works."""

from adcompile.utils import data  # noqa: F401
