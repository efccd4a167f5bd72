"""torch.nn for the eager runtime: Parameter, Module and the layers and losses built on it."""

from runtime.nn import functional, init  # noqa: F401
from runtime.nn.modules import (  # noqa: F401
    Dropout,
    Flatten,
    Identity,
    L1Loss,
    Linear,
    LogSoftmax,
    Module,
    MSELoss,
    NLLLoss,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from runtime.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d  # noqa: E402,F401
from runtime.nn.pooling import (  # noqa: E402,F401
    AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d)
from runtime.nn.norm import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm  # noqa: E402,F401
from runtime.nn.activation import (  # noqa: E402,F401
    ELU, GELU, Embedding, LeakyReLU, SiLU, Softplus)
from runtime.nn.loss import (  # noqa: E402,F401
    BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, HuberLoss, KLDivLoss,
    SmoothL1Loss)
from runtime.nn.containers import (  # noqa: E402,F401
    ModuleDict, ModuleList, ParameterDict, ParameterList)
from runtime.nn import utils  # noqa: E402,F401
from runtime.nn.rnn import GRU, LSTM, RNN, RNNBase  # noqa: E402,F401
from runtime.nn.attention import MultiheadAttention  # noqa: E402,F401
