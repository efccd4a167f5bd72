"""torch.special: the special functions under their SciPy-style names. Each is the same
operation (and the same backward node) as its torch.* counterpart, as in PyTorch."""

from runtime import ops as _F
from runtime.ops import special as _special

erf = _special.erf
erfc = _special.erfc
erfinv = _special.erfinv
expit = _F.sigmoid
logit = _special.logit
digamma = psi = _special.digamma
gammaln = _special.lgamma
polygamma = _special.polygamma
xlogy = _special.xlogy
exp2 = _special.exp2
expm1 = _special.expm1
i0 = _special.i0
i1 = _special.special_i1
log1p = _F.log1p
logsumexp = _F.logsumexp
softmax = _F.softmax
log_softmax = _F.log_softmax
