# Cross-checks evalsuite/tasks/lcbharness.py against the lm-eval fork's own
# grader: python3 livecodebench_crosscheck.py DIR, where DIR holds the fork's
# lm_eval/tasks/livecodebench/testing_util.py (tstescoTT/lm-evaluation-harness
# main 83b78bf2; numpy is stubbed, testing_util only imports it). Each program
# runs through both graders, stdin from /dev/null as in the fork's
# multiprocessing child; the script prints where they disagree.
import json, os, subprocess, sys, tempfile
H = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lcbharness.py")).read()
REF = os.path.abspath(sys.argv[1])
FORK = '''
import sys, types, json
sys.modules['numpy'] = types.ModuleType('numpy')
sys.path.insert(0, sys.argv[3])
import testing_util
sample, code = json.loads(sys.argv[1]), sys.argv[2]
res, meta = testing_util.run_test(sample, test=code, timeout=6)
ok = all((r is True) or (not isinstance(r, bool) and r > 0) for r in res)
sys.stdout = sys.__stdout__
print("RESULT", ok, file=sys.__stderr__)
'''
stdio = dict(inputs=["2 3\n", "-7 4\n"], outputs=["5\n", "-3\n"], fn_name=None)
multi = dict(inputs=["3\n1 2 3\n"], outputs=["1 2 3\n6\n"], fn_name=None)
dec = dict(inputs=["2\n1 2\n"], outputs=["1.5\n"], fn_name=None)
fn = dict(inputs=["4\n1", "[1,2]\n2"], outputs=["6", "[1, 2]"], fn_name="f")
progs = [
 (stdio, "a,b=map(int,input().split())\nprint(a+b)"),
 (stdio, "a,b=map(int,input().split())\nprint(a-b)"),
 (stdio, "import sys\na,b=map(int,sys.stdin.readline().split())\nprint(a+b)"),
 (stdio, "from sys import stdin\na,b=map(int,stdin.readline().split())\nprint(a+b)"),
 (stdio, "import sys\na,b=map(int,sys.stdin.read().split())\nprint(a+b)"),
 (stdio, "import sys\na,b=map(int,sys.stdin.buffer.read().split())\nprint(a+b)"),
 (stdio, "print(sum(map(int, open(0).read().split())))"),
 (stdio, "a,b=map(int,input().split())\nprint(a+b)\nexit()"),
 (stdio, "import sys\na,b=map(int,input().split())\nprint(a+b)\nsys.exit(0)\nprint(1)"),
 (stdio, "def main():\n    a,b=map(int,input().split())\n    print(a+b)\nif __name__ == '__main__':\n    main()"),
 (stdio, "def main():\n    a,b=map(int,input().split())\n    print(a+b)\nif __name__ == \"__main__\":\n    main()"),
 (stdio, "a,b=map(int,input().split())\nprint(a+b, '  ')\nprint()\n"),
 (stdio, "a,b=map(int,input().split())\nprint(a+b)\nprint(0)"),
 (stdio, "import sys\ninput = sys.stdin.readline\na,b=map(int,input().split())\nprint(a+b)"),
 (stdio, "x = [l for l in __import__('sys').stdin]\na,b=map(int,x[0].split())\nprint(a+b)"),
 (stdio, "import sys\nlines = sys.stdin.readlines()\na,b=map(int,lines[0].split())\nprint(a+b)"),
 (stdio, "from sys import *\na,b=map(int,stdin.read().split())\nprint(a+b)"),
 (stdio, "import os\nos.system('true')\na,b=map(int,input().split())\nprint(a+b)"),
 (stdio, "a,b=map(int,input().split())\nsys.stdout.write(str(a+b)+'\\n')"),
 (stdio, "from sys import stdout\na,b=map(int,input().split())\nstdout.write(str(a+b)+'\\n')"),
 (stdio, "import math\nprint(math.gcd(4,6)+int(input().split()[0])+int(input().split()[1]) if False else sum(map(int,input().split())))"),
 (stdio, "cnt = 0\ndef f():\n    global cnt\n    cnt += 1\na,b=map(int,input().split())\nprint(a+b)"),
 (stdio, "a, b = map(int, input().split())\nprint(a + b\n"),
 (stdio, ""),
 (multi, "n=int(input())\na=list(map(int,input().split()))\nprint(*a)\nprint(sum(a))"),
 (multi, "n=int(input())\na=list(map(int,input().split()))\nprint(' '.join(map(str,a)) + '   ')\nprint(float(sum(a)))"),
 (multi, "n=int(input())\na=list(map(int,input().split()))\nprint(*a, sep='  ')\nprint(sum(a))"),
 (dec, "n=int(input())\na=list(map(int,input().split()))\nprint(sum(a)/n)"),
 (dec, "print('1.50')"),
 (dec, "print('1.5e0')"),
 (dec, "print('1.5000001')"),
 (fn, "class Solution:\n    def f(self, a, b):\n        if isinstance(a, list): return tuple(a)\n        return a + 2*b"),
 (fn, "class Solution:\n    def f(self, a, b):\n        if isinstance(a, list): return a\n        return a + b"),
 (fn, "class Solution:\n    def g(self, a, b):\n        return a"),
 (fn, "def f(a, b):\n    if isinstance(a, list): return a\n    return a + 2*b"),
 (fn, "class Solution:\n    def f(self, a, b):\n        if isinstance(a, list): return a\n        return float(a + 2*b)"),
 (fn, "class Solution:\n    def f(self, a, b):\n        import sys; sys.exit(0)"),
 (fn, "from typing import List\nclass Solution:\n    def f(self, a: List[int], b: int) -> int:\n        if isinstance(a, list): return a\n        return a + 2*b"),
 (fn, "class Solution:\n    def f(self, a, b):\n        return [1,2] if isinstance(a, list) else 6.0000001"),
 (stdio, "a,b=map(int,input().split())\nif a < 0: raise ValueError\nprint(a+b)"),
 (stdio, "a,b=map(int,input().split())\nif a < 0:\n    while True: pass\nprint(a+b)"),
 (multi, "n=int(input())\na=list(map(int,input().split()))\nprint('1  2 3')\nprint(sum(a))\n\n"),
 (multi, "n=int(input())\na=list(map(int,input().split()))\nprint('1 2 3')\nprint()\nprint(sum(a))"),
 (fn, "import sys\nsys.setrecursionlimit(10**6)\nclass Solution:\n    def f(self, a, b):\n        def r(k): return 0 if k == 0 else 1 + r(k-1)\n        r(20000)\n        return a if isinstance(a, list) else a + 2*b"),
 (fn, "class Solution:\n    def f(self, a, b):\n        return None"),
 (stdio, "import sys\ndata = sys.stdin.read().split()\nprint(int(data[0]) + int(data[1]))\nexit(0)"),
 (stdio, "while True:\n    try:\n        a,b=map(int,input().split())\n    except EOFError:\n        break\n    print(a+b)"),
 (stdio, "import sys\nfor line in sys.stdin:\n    a,b=map(int,line.split())\n    print(a+b)"),
]
bad = 0
for i, (case, code) in enumerate(progs):
    sample = {"input_output": json.dumps(case)}
    r = subprocess.run([sys.executable, "-c", FORK, json.dumps(sample), code, REF], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    fork = "RESULT True" in r.stderr
    if "RESULT" not in r.stderr: fork = False
    c = dict(case, code=code, timeout=6)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(c, f)
        m = subprocess.run([sys.executable, "-c", H + '\nmain("case.json")\n'], cwd=d, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    mine = m.returncode == 0
    flag = "" if fork == mine else "   <<< DIFFER"
    if fork != mine: bad += 1
    print(i, "fork", fork, "ttis", mine, repr(code[:60]), flag)
    if fork != mine: print("  fork err:", r.stderr[-300:], "\n  mine err:", m.stderr[-300:])
print("differ:", bad)
sys.exit(1 if bad else 0)
