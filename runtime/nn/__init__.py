"""torch.nn for the eager runtime: Parameter, Module and the layers and losses built on it."""

from runtime.nn import functional, init  # noqa: F401
from runtime.nn.modules import (  # noqa: F401
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    Identity,
    L1Loss,
    Linear,
    LogSoftmax,
    Module,
    ModuleList,
    MSELoss,
    NLLLoss,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
