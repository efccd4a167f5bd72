"""adcompile as a GradBench tool: GradBench's JSON-lines protocol on stdin and stdout.

    python benchmarks/gradbench/tool.py              # serve one session (SPEC.md section 9)
    python benchmarks/gradbench/tool.py --selftest   # script a small gmm session through it

Each message is one line of JSON and gets one line back, with the same id. `define` imports
the eval's module from this folder (success is false for a module we do not have);
`evaluate` prepares the module's Adcompile class on the input (compiling, or loading the
compiled code from adcompile's on-disk cache), reported as a "prepare" timing, then calls the
function until it has run `min_runs` times and for `min_seconds` seconds, one "evaluate"
timing per call, and answers with the last call's output. The eval sends the same input for
a workload's two functions, so the prepared object of the last input is reused. Anything
else (start, analysis, end) is answered with its id. Only responses go to stdout: whatever
the evals' code prints goes to stderr.
"""

import importlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

# GradBench's function names, per module, to the interface's two methods
_PRIMAL_GRADIENT = {"primal": "objective", "gradient": "derivative"}
_OBJECTIVE_JACOBIAN = {"objective": "objective", "jacobian": "derivative"}
FUNCTIONS = {
    "gmm": _OBJECTIVE_JACOBIAN, "lstm": _OBJECTIVE_JACOBIAN, "ba": _OBJECTIVE_JACOBIAN,
    "lse": _PRIMAL_GRADIENT, "llsq": _PRIMAL_GRADIENT, "ode": _PRIMAL_GRADIENT,
    "det": _PRIMAL_GRADIENT, "kmeans": {"cost": "objective", "dir": "derivative"},
}
_RUNS_FIELDS = ("min_runs", "min_seconds")


class Tool:
    """The state of one session: imported modules and the last prepared input per module."""

    def __init__(self):
        self.modules = {}
        self.prepared = {}  # module name -> (input without the runs fields, Adcompile object)

    def handle(self, message):
        reply = {"id": message["id"]}
        kind = message.get("kind")
        if kind == "start":
            reply["tool"] = "adcompile"
        elif kind == "define":
            reply.update(self.define(message["module"]))
        elif kind == "evaluate":
            reply.update(self.evaluate(message))
        return reply

    def define(self, name):
        if name not in FUNCTIONS or not os.path.exists(os.path.join(HERE, f"{name}.py")):
            return {"success": False, "error": f"adcompile has no implementation of {name}"}
        try:
            self.modules[name] = importlib.import_module(name)
        except Exception as e:
            return {"success": False, "error": f"{type(e).__name__}: {e}"}
        return {"success": True}

    def evaluate(self, message):
        name, function = message["module"], message["function"]
        method = FUNCTIONS.get(name, {}).get(function)
        if method is None:
            return {"success": False, "error": f"{name} has no function {function!r}"}
        try:
            if name not in self.modules:
                failure = self.define(name)
                if not failure["success"]:
                    return failure
            inp = message["input"]
            timings = []
            prepared = self.prepare(name, inp, timings)
            output = self.repeat(getattr(prepared, method), inp, timings)
            return {"success": True, "output": harness.to_json(output), "timings": timings}
        except Exception as e:
            return {"success": False, "error": f"{type(e).__name__}: {e}"}

    def prepare(self, name, inp, timings):
        data = {key: value for key, value in inp.items() if key not in _RUNS_FIELDS}
        last = self.prepared.get(name)
        if last is not None and last[0] == data:
            return last[1]
        start = time.perf_counter_ns()
        prepared = self.modules[name].Adcompile(data)
        timings.append({"name": "prepare", "nanoseconds": time.perf_counter_ns() - start})
        self.prepared[name] = (data, prepared)
        return prepared

    @staticmethod
    def repeat(call, inp, timings):
        """Call until min_runs calls and min_seconds of them (SPEC.md section 9.3)."""
        runs, seconds = int(inp.get("min_runs", 1)), float(inp.get("min_seconds", 1.0))
        count, total = 0, 0
        while count < runs or total < seconds * 1e9:
            start = time.perf_counter_ns()
            output = call()
            elapsed = time.perf_counter_ns() - start
            timings.append({"name": "evaluate", "nanoseconds": elapsed})
            count, total = count + 1, total + elapsed
        return output


def serve(lines, out):
    """Answer every message of `lines` on `out`, one flushed line each."""
    harness.MEASURE_COMPILE = False
    tool = Tool()
    for line in lines:
        if not line.strip():
            continue
        reply = tool.handle(json.loads(line))
        out.write(json.dumps(reply) + "\n")
        out.flush()


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    responses = sys.stdout
    sys.stdout = sys.stderr  # nothing but responses may reach the eval
    serve(sys.stdin, responses)
    return 0


# -- self-test ----------------------------------------------------------------------------------


def selftest():
    """Pipe a scripted gmm session (d=2, k=5) through a tool process and check each reply."""
    import gmm

    inp = {**gmm.make_input(d=2, k=5), "min_runs": 3, "min_seconds": 0.0}
    script = [
        {"id": 0, "kind": "start", "eval": "gmm"},
        {"id": 1, "kind": "define", "module": "gmm"},
        {"id": 2, "kind": "evaluate", "module": "gmm", "function": "objective", "input": inp,
         "description": "2_5_1000"},
        {"id": 3, "kind": "analysis", "of": 2, "valid": True},
        {"id": 4, "kind": "evaluate", "module": "gmm", "function": "jacobian", "input": inp,
         "description": "2_5_1000"},
        {"id": 5, "kind": "analysis", "of": 4, "valid": True},
        {"id": 6, "kind": "define", "module": "no_such_eval"},
    ]
    text = "".join(json.dumps(message) + "\n" for message in script)
    done = subprocess.run([sys.executable, os.path.abspath(__file__)], input=text,
                          capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    problems = [] if done.returncode == 0 else [f"exit status {done.returncode}"]
    if len(lines) != len(script):
        problems.append(f"{len(lines)} response lines for {len(script)} messages")
    for message, line in zip(script, lines):
        problems += [f"id {message['id']}: {p}" for p in _check_reply(message, json.loads(line))]
    if problems:
        print("selftest FAILED:\n  " + "\n  ".join(problems) + "\n" + done.stderr[-2000:])
        return 1
    print(f"selftest passed: {len(script)} messages, {len(lines)} well-formed responses")
    return 0


def _check_reply(message, reply):
    problems = [] if reply.get("id") == message["id"] else ["wrong id"]
    kind = message["kind"]
    if kind == "define":
        expected = message["module"] == "gmm"
        if reply.get("success") is not expected:
            problems.append(f"define success is {reply.get('success')}, not {expected}")
    elif kind == "evaluate":
        problems += _check_evaluate(message, reply)
    elif set(reply) - {"id", "tool", "config"}:
        problems.append(f"unexpected fields {sorted(reply)}")
    return problems


def _check_evaluate(message, reply):
    if reply.get("success") is not True or "error" in reply:
        return [f"evaluate failed: {reply.get('error')}"]
    runs = [t for t in reply["timings"] if t["name"] == "evaluate"]
    problems = []
    if len(runs) < message["input"]["min_runs"]:
        problems.append(f"{len(runs)} evaluate timings, fewer than min_runs")
    if not all(isinstance(t["nanoseconds"], int) and t["nanoseconds"] >= 0
               for t in reply["timings"]):
        problems.append("a timing is not a non-negative integer")
    output = reply["output"]
    if message["function"] == "objective":
        # SPEC.md 1.7's check value
        if not isinstance(output, float) or abs(output + 3916.464821054466) > 1e-8:
            problems.append(f"objective {output!r} is not -3916.464821054466")
    elif not (isinstance(output, dict) and set(output) == {"alpha", "mu", "q", "l"}
              and len(output["alpha"]) == 5 and [len(r) for r in output["mu"]] == [2] * 5
              and [len(r) for r in output["l"]] == [1] * 5
              and abs(output["alpha"][0] - 99.56198742987118) < 1e-8):
        problems.append("jacobian is not {alpha: [5], mu: [5][2], q: [5][2], l: [5][1]} "
                        "with SPEC.md's check value")
    return problems


if __name__ == "__main__":
    sys.exit(main())
