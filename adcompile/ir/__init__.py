"""The typed SSA IR: types, nodes, primitives, printer, verifier, reference interpreter."""
