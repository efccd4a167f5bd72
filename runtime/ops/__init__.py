"""Forward kernels of the eager runtime, one module per family; this package is the flat
namespace (`runtime.ops.add`, ...) that Tensor methods and the public API call."""

from runtime.ops._core import (  # noqa: F401
    check_operand,
    get_default_dtype,
    result_dtype,
    set_default_dtype,
    with_contiguous_strides,
    wrap,
)
from runtime.ops.elementwise import *  # noqa: F401,F403
from runtime.ops.elementwise import abs, bitwise, pow, round  # noqa: F401
from runtime.ops.reductions import *  # noqa: F401,F403
from runtime.ops.reductions import max, min, sum  # noqa: F401
from runtime.ops.linalg import *  # noqa: F401,F403
from runtime.ops.equality import equal  # noqa: F401
from runtime.ops.complex import (angle, conj, imag, real, sgn,  # noqa: F401
                                 view_as_complex, view_as_real)
from runtime.ops.shape import *  # noqa: F401,F403
from runtime.ops import shape  # noqa: F401
from runtime.ops.inplace import *  # noqa: F401,F403
from runtime.ops.misc import *  # noqa: F401,F403
from runtime.ops.misc import all, any  # noqa: F401
from runtime.ops.special import remainder, rremainder  # noqa: F401,E402
