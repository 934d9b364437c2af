# LiveCodeBench grading harness, run by evalsuite/sandbox as program.py
# with main("case.json"): the case file beside it holds the candidate code,
# fn_name (None for stdin/stdout problems), the tests' inputs and outputs
# and the per-test time limit. It grades as the lm-eval fork's
# testing_util.run_test does (see livecodebench.go): every test must pass;
# the first failure ends the run with status 1 and its reason on stderr.
import ast
import builtins
import io
import json
import signal
import sys
import types

MODULES = ["string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
           "statistics", "itertools", "functools", "operator", "io", "sys", "json"]
# The names every graded program sees: each module's names, then the
# builtins and typing again, then the modules themselves.
PRELUDE = "".join("from %s import *\n" % m for m in MODULES + ["builtins", "typing"]) + \
    "".join("import %s\n" % m for m in MODULES) + "sys.setrecursionlimit(50000)\n"


class TestTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise TestTimeout()


class Failed(BaseException):
    pass


def fail(why):
    raise Failed(why)


def disable_escape_hatches():
    # The fork's reliability_guard: calls that would change the host or
    # the test's process are taken away before the candidate runs.
    import os
    import shutil
    import subprocess
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                 "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
                 "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    for name in ("rmtree", "move", "chown"):
        setattr(shutil, name, None)
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


def load_module(code, timeout):
    signal.alarm(timeout)
    try:
        module = types.ModuleType("tmp_sol")
        exec(code, module.__dict__)
        # LeetCode problems wrap the answer in class Solution.
        return module.Solution() if "class Solution" in code else module
    finally:
        signal.alarm(0)


def without_main_guard(code):
    # A trailing `if __name__ == '__main__':` block runs unconditionally.
    try:
        tree = ast.parse(code)
        last = tree.body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            return ast.unparse(tree.body[:-1]) + "\n" + ast.unparse(last.body)
    except Exception:
        pass
    return code


def as_function(code):
    # Top-level imports stay at module level; everything else becomes the
    # body of wrapped_function, called once per test.
    try:
        tree = ast.parse(code)
        imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        rest = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        fn = ast.FunctionDef(name="wrapped_function",
                             args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                             body=rest, decorator_list=[], lineno=-1)
        return PRELUDE + "\n" + ast.unparse(imports) + "\n" + ast.unparse(fn)
    except Exception:
        return code


def run_with_input(fn, text):
    # The fork patches read/readline/readlines on the process's own stdin
    # object (names bound by `from sys import *` see those), then makes
    # sys.stdin a StringIO of the input and open() return the input.
    lines = iter(text.split("\n"))
    real_stdin, real_open = sys.stdin, builtins.open
    patched = []
    for name, f in (("read", lambda *a: text), ("readlines", lambda *a: text.split("\n")),
                    ("readline", lambda *a: next(lines))):
        try:
            setattr(real_stdin, name, f)
            patched.append(name)
        except (AttributeError, TypeError):
            pass
    sys.stdin = io.StringIO(text)
    builtins.open = lambda *a, **k: io.StringIO(text)
    try:
        fn()
    except SystemExit:
        pass
    finally:
        sys.stdin, builtins.open = real_stdin, real_open
        for name in patched:
            delattr(real_stdin, name)


def captured(fn, text):
    real_stdout = sys.stdout
    buf = io.StringIO()
    buf.close = lambda *a: None
    sys.stdout = buf
    try:
        run_with_input(fn, text)
    finally:
        sys.stdout = real_stdout
    return buf.getvalue()


def stripped_lines(s):
    return [line.strip() for line in s.strip().split("\n")]


def same_line(got, want):
    if got == want:
        return True
    from decimal import Decimal
    try:
        return [Decimal(x) for x in got.split()] == [Decimal(x) for x in want.split()]
    except Exception:
        return False


def grade_stdio(case):
    t = case["timeout"]
    sol = load_module(as_function(without_main_guard(case["code"])), t)
    fn = getattr(sol, "wrapped_function", None)
    if fn is None:
        fail("no program to run")
    for i, (inp, want) in enumerate(zip(case["inputs"], case["outputs"])):
        if isinstance(inp, list):
            inp = "\n".join(inp)
        signal.alarm(t)
        try:
            got = captured(fn, inp)
        except TestTimeout:
            fail("test %d: time limit exceeded" % i)
        except Exception as e:
            fail("test %d: runtime error %r" % (i, e))
        finally:
            signal.alarm(0)
        g, w = stripped_lines(got), stripped_lines(want)
        if len(g) != len(w):
            fail("test %d: %d output lines, want %d" % (i, len(g), len(w)))
        for k, (a, b) in enumerate(zip(g, w)):
            if not same_line(a, b):
                fail("test %d line %d: %r != %r" % (i, k, a[:200], b[:200]))


def grade_call(case):
    t = case["timeout"]
    sol = load_module(PRELUDE + "\n\n" + case["code"], t)
    method = getattr(sol, case["fn_name"], None)
    if method is None:
        fail("no method %s" % case["fn_name"])
    for i, (inp, want) in enumerate(zip(case["inputs"], case["outputs"])):
        args = [json.loads(line) for line in inp.split("\n")]
        want = json.loads(want)
        signal.alarm(t)
        try:
            got = method(*args)
        except TestTimeout:
            fail("test %d: time limit exceeded" % i)
        except Exception as e:
            fail("test %d: runtime error %r" % (i, e))
        finally:
            signal.alarm(0)
        if isinstance(got, tuple):
            got = list(got)
        if got != want:
            fail("test %d: wrong answer %r" % (i, str(got)[:200]))


def main(path):
    with open(path, encoding="utf-8") as f:
        case = json.load(f)
    # The expected outputs are not left where the candidate could read them.
    import os
    os.remove(path)
    signal.signal(signal.SIGALRM, on_alarm)
    disable_escape_hatches()
    try:
        if case["fn_name"] is None:
            grade_stdio(case)
        else:
            grade_call(case)
    except Failed as e:
        why = str(e)
    except BaseException as e:
        # SystemExit from a call-based solution too: the fork's grader
        # process dies and the problem fails.
        why = "error during testing: %r" % (e,)
    else:
        return
    sys.stderr.write("livecodebench: %s\n" % why[:2000])
    raise SystemExit(1)
