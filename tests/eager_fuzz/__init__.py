"""Differential fuzzer of the eager runtime: random autograd programs run on PyTorch 2.13 and
on adcompile (`import adcompile as torch`), compared statement by statement.

- `gen`: the program generator (a table of statement templates, guided by running PyTorch);
- `check`: runs a program on both libraries, normalises what each statement shows (values,
  dtypes, shapes, flags, grad_fn names along next_functions, error classes, .grad of leaves,
  hook order), compares, names the first difference's class and shrinks failing programs;
- `test_eager_fuzz.py`: a fixed-seed slice in CI, `--time SECONDS` for fresh seeds;
- `python -m tests.eager_fuzz --time SECONDS`: the same long run from the command line, with
  the failure rate and the classes found.
"""
