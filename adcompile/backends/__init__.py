"""Code generators: python (readable source, the oracle) and llvm (native code)."""
