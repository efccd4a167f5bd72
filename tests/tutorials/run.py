"""Run tutorial scripts one after another in this process and print each one's output after a
marker line, so a test can compare them with two interpreter start-ups instead of one per
script. `python tests/tutorials/run.py torch|adcompile script.py ...`: with `adcompile`, every
`import torch...` of the scripts imports `adcompile...` instead (the same module objects)."""

import importlib
import importlib.abc
import pathlib
import importlib.util
import runpy
import sys
import traceback


class _TorchIsAdcompile(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import torch.x.y` gives the module `adcompile.x.y`, as if adcompile were installed
    under torch's name."""

    def find_spec(self, fullname, path, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("adcompile" + spec.name[len("torch"):])

    def exec_module(self, module):
        pass


def main(library, scripts):
    if library == "adcompile":  # this checkout's adcompile, not an installed one
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
        sys.meta_path.insert(0, _TorchIsAdcompile())
    for script in scripts:
        print(f"=== {script}", flush=True)
        try:
            runpy.run_path(script, run_name="__main__")
        except Exception:  # the comparison shows where it stopped
            print("".join(traceback.format_exc().splitlines(True)[-3:]))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
