"""Code generators: llvm (native code, the default), python (readable source, the oracle)."""


class _Miss:
    """What a native entry point returns when the arguments do not fit its specialization:
    the dispatcher then picks (or compiles) the one that fits."""

    __slots__ = ()

    def __repr__(self):
        return "<adcompile: arguments do not fit this specialization>"


MISS = _Miss()
