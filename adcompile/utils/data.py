"""`adcompile.utils.data` is `torch.utils.data`: the runtime's datasets and DataLoader."""

from runtime.utils.data import *  # noqa: F401,F403
from runtime.utils.data import __all__  # noqa: F401
