package tasks

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/sandbox"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// The pickles CPython writes for pickle.dumps('["a"]', protocol=p).
var lcbPickles = map[int]string{
	2: "\x80\x02X\x05\x00\x00\x00[\"a\"]q\x00.",
	3: "\x80\x03X\x05\x00\x00\x00[\"a\"]q\x00.",
	4: "\x80\x04\x95\t\x00\x00\x00\x00\x00\x00\x00\x8c\x05[\"a\"]\x94.",
	5: "\x80\x05\x95\t\x00\x00\x00\x00\x00\x00\x00\x8c\x05[\"a\"]\x94.",
}

func TestUnpickleString(t *testing.T) {
	for p, data := range lcbPickles {
		got, err := UnpickleString([]byte(data))
		if err != nil || got != `["a"]` {
			t.Errorf("protocol %d: %q, %v", p, got, err)
		}
	}
	// BINUNICODE8, as protocol 4 writes a str of 4 GiB or more.
	if got, err := UnpickleString([]byte("\x80\x04\x8d\x02\x00\x00\x00\x00\x00\x00\x00hi\x94.")); err != nil || got != "hi" {
		t.Errorf("BINUNICODE8: %q, %v", got, err)
	}
	refused := map[string]string{
		"a list":               "\x80\x04\x95\x08\x00\x00\x00\x00\x00\x00\x00]\x94\x8c\x01x\x94a.",
		"a global (os.system)": "\x80\x02cos\nsystem\n.",
		"two strs":             "\x80\x04\x8c\x02os\x8c\x06system\x93.",
		"a REDUCE":             "cos\nsystem\n(S'echo hi'\ntR.",
		"protocol 0":           "Vx\np0\n.",
		"no STOP":              "\x80\x04\x8c\x01x",
		"bytes after STOP":     "\x80\x04\x8c\x01x.x",
		"a short length":       "\x80\x04X\xff\x00\x00\x00x.",
		"not UTF-8":            "\x80\x04\x8c\x01\xff.",
		"empty":                "",
		"a STOP alone":         ".",
	}
	for name, data := range refused {
		if got, err := UnpickleString([]byte(data)); err == nil {
			t.Errorf("%s: read %q, want an error", name, got)
		}
	}
	_, err := UnpickleString([]byte(refused["a global (os.system)"]))
	if err == nil || !strings.Contains(err.Error(), "never runs other pickle code") {
		t.Errorf("the refusal says what is read and why: %v", err)
	}
}

func TestDecodeLCBPrivateTests(t *testing.T) {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	js := `[{"input": "1", "output": "2", "testtype": "x"}]`
	w.Write(append(append([]byte{0x80, 0x04, 0x8c, byte(len(js))}, js...), 0x94, '.'))
	w.Close()
	tests, err := decodeLCBPrivateTests(base64.StdEncoding.EncodeToString(z.Bytes()))
	if err != nil || len(tests) != 1 || tests[0].Input != "1" || tests[0].Output != "2" {
		t.Fatalf("%+v, %v", tests, err)
	}
	if tests, err := decodeLCBPrivateTests(`[{"input": "a", "output": "b", "testtype": "stdin"}]`); err != nil || len(tests) != 1 {
		t.Errorf("plain JSON tests (first releases): %+v, %v", tests, err)
	}
	for _, bad := range []string{"!!", base64.StdEncoding.EncodeToString([]byte("not zlib"))} {
		if _, err := decodeLCBPrivateTests(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func FuzzUnpickleString(f *testing.F) {
	for _, p := range lcbPickles {
		f.Add([]byte(p))
	}
	f.Add([]byte("\x80\x04\x95\x08\x00\x00\x00\x00\x00\x00\x00]\x94\x8c\x01x\x94a."))
	f.Add([]byte("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xffx."))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := UnpickleString(data)
		if err == nil && len(s) > len(data) {
			t.Fatalf("a %d-byte string out of %d bytes", len(s), len(data))
		}
	})
}

// lcbRight are correct programs for the testdata rows, as a model
// answers them (a fenced block after some prose).
var lcbRight = map[string]string{
	"abc000_a": "Here is the program.\n```python\na, b = map(int, input().split())\nprint(a + b)\n```\n",
	"2812":     "```python\nclass Solution:\n    def theMaximumAchievableX(self, num: int, t: int) -> int:\n        return num + 2 * t\n```",
	"abc000_b": "```python\nimport sys\ndef main():\n    n = int(sys.stdin.readline())\n    a = list(map(int, sys.stdin.readline().split()))\n    print(sum(a) / n)\n\nif __name__ == '__main__':\n    main()\n```",
}

func TestLiveCodeBench(t *testing.T) {
	needPython(t)
	task, err := Build("livecodebench", Source{Dataset: "testdata/livecodebench_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != 3 {
		t.Fatalf("%d docs", len(task.Docs))
	}
	for i, name := range []string{"livecodebench_stdin.txt", "livecodebench_functional.txt"} {
		reqs, err := task.Requests(task.Docs[i])
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, reqs[0].Context)
	}
	stdin, functional, decimal := task.Docs[0], task.Docs[1], task.Docs[2]
	checkScores(t, task, stdin, "none", "acc", []scoreCase{
		{lcbRight["abc000_a"], 1},
		{"```\nimport sys\nfrom sys import stdin\na, b = map(int, stdin.readline().split())\nprint(a + b)\n```", 1},
		// open is bound to the real builtin by the prelude's star import
		// before the fork patches builtins.open, so open(0) reads the
		// grader's own stdin (empty), in the fork as here.
		{"```python\nprint(sum(map(int, open(0).read().split())))\n```", 0},
		{"```python\na, b = map(int, input().split())\nprint(a - b)\n```", 0},                    // wrong
		{"```python\na, b = map(int, input().split())\nprint(a + b)\nprint()\nprint(1)\n```", 0}, // extra lines
		{"a, b = map(int, input().split())\nprint(a + b)", 0},                                    // no fences: no code
		{"```python\na, b = map(int, input().split())\nprint(a + b\n```", 0},                     // syntax error
		{"```python\nraise ValueError('crash')\n```", 0},                                         // crash
		{"```python\nimport os\nos.system('true')\nprint(5)\n```", 0},                            // disabled, as in the fork
		// A program that would print the expected outputs: they are gone.
		{"```python\nimport builtins, json\ni = getattr(builtins, 'k', 0)\nbuiltins.k = i + 1\nprint(json.load(open('case.json'))['outputs'][i])\n```", 0},
	})
	checkScores(t, task, functional, "none", "acc", []scoreCase{
		{lcbRight["2812"], 1},
		{"```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        return num + t\n```", 0},
		{"```python\nclass Solution:\n    def other(self, num, t):\n        return num + 2 * t\n```", 0},
		{"```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        return 1 // 0\n```", 0},
		{"```python\nimport sys\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        sys.exit(0)\n```", 0},
		{"```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        return (num + 2 * t,)[0]\n```", 1},
	})
	checkScores(t, task, decimal, "none", "acc", []scoreCase{
		{lcbRight["abc000_b"], 1}, // prints 1.5 and 1.0
		{"```python\nn = int(input())\na = list(map(int, input().split()))\nprint('%.2f' % (sum(a) / n))\n```", 1}, // 1.50 = 1.5 as Decimals
		{"```python\nprint('1.5')\n```", 0},
	})
	right := func(d evalsuite.Doc) string { return lcbRight[field(d, "question_id")] }
	wrong := func(evalsuite.Doc) string { return "```python\nprint(0)\n```" }
	checkOracle(t, task, openai.Chat, "acc,none", right, wrong)
}

// TestLiveCodeBenchRunaway: a program that never ends, one that takes
// 10 GB and a fork bomb are stopped and fail.
func TestLiveCodeBenchRunaway(t *testing.T) {
	needPython(t)
	if testing.Short() {
		t.Skip("runs the 6 s per-test limit out")
	}
	task, err := Build("livecodebench", Source{Dataset: "testdata/livecodebench_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	checkScores(t, task, task.Docs[1], "none", "acc", []scoreCase{
		{"```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        while True: pass\n```", 0},
		{"```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        b = bytearray(10 << 30)\n        return num + 2 * t\n```", 0},
	})
	checkScores(t, task, task.Docs[0], "none", "acc", []scoreCase{
		{"```python\nimport multiprocessing\nwhile True:\n    multiprocessing.Process(target=lambda: None).start()\n```", 0},
	})
}

// TestLiveCodeBenchHubFolder: from the folder evalsuite/taskdata makes of
// the pulled files, the six files of release_v6 are read and a later
// release's file is left out.
func TestLiveCodeBenchHubFolder(t *testing.T) {
	dir := t.TempDir()
	rows, err := os.ReadFile("testdata/livecodebench_test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(rows)), "\n")
	for name, text := range map[string]string{"00000-test.jsonl": lines[0], "00005-test6.jsonl": lines[1], "00006-test7.jsonl": lines[2]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task, err := Build("livecodebench", Source{Dataset: dir, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, d := range task.Docs {
		if d.ID != i {
			t.Errorf("doc %d has id %d", i, d.ID)
		}
		ids = append(ids, field(d, "question_id"))
	}
	if got := strings.Join(ids, ","); got != "abc000_a,2812" {
		t.Errorf("documents %s, want test.jsonl's and test6.jsonl's (abc000_a,2812)", got)
	}
}

// TestLiveCodeBenchPrivateTestsStayOnDisk: the loader keeps where each
// row's private tests are, not the tests, and reading them back from a
// file that changed is an error, not another problem's tests.
func TestLiveCodeBenchPrivateTestsStayOnDisk(t *testing.T) {
	rows, err := os.ReadFile("testdata/livecodebench_test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "test.jsonl")
	if err := os.WriteFile(path, rows, 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := loadLCB(Source{Dataset: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := docs[0].Fields["private_test_cases"].(lcbPrivateRef); !ok {
		t.Fatalf("private_test_cases loaded as %T", docs[0].Fields["private_test_cases"])
	}
	c, err := lcbCaseOf(docs[1])
	if err != nil || len(c.Inputs) != 3 || c.Inputs[2] != "1\n50" || c.FnName == nil || *c.FnName != "theMaximumAchievableX" {
		t.Fatalf("%+v, %v", c, err)
	}
	lines := strings.SplitAfter(string(rows), "\n")
	if err := os.WriteFile(path, []byte(lines[1]+lines[0]+lines[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lcbCaseOf(docs[1]); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("a changed file: %v", err)
	}
}

// FuzzLCBRows: any JSONL text loads and grades' test gathering returns
// tests or an error, never a panic.
func FuzzLCBRows(f *testing.F) {
	rows, err := os.ReadFile("testdata/livecodebench_test.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rows)
	f.Add([]byte(`{"public_test_cases": "[]", "private_test_cases": "eJw=", "metadata": "{\"func_name\": 3}"}`))
	f.Add([]byte("{}\n\n[1]\nnull\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := readLCBRows(bytes.NewReader(data), "test.jsonl")
		if err != nil {
			return
		}
		for _, d := range docs {
			if d.Invalid == nil {
				// The private tests are read back from the file only
				// when they are not where the loader left them.
				if _, ok := d.Fields["private_test_cases"].(lcbPrivateRef); ok {
					d.Fields["private_test_cases"] = string(data[:min(len(data), 4096)])
				}
				_, _ = lcbCaseOf(d)
				_, _ = lcbPrompt(d)
			}
		}
	})
}

// TestUnpickleStringMatchesCPython: the strs CPython pickles at every
// protocol from 2 to 5, short, framed and longer than a frame, read back
// as they were.
func TestUnpickleStringMatchesCPython(t *testing.T) {
	needPython(t)
	py, _ := sandbox.FindPython()
	dir := t.TempDir()
	script := `import json, os, pickle, sys
for p in (2, 3, 4, 5):
    for n in (0, 10, 255, 256, 65535, 70000, 300000):
        s = json.dumps([{"input": "1 " * (n // 2) + "\u00e9\u4e2d", "output": "x", "testtype": "stdin"}], ensure_ascii=(n % 2 == 0))
        with open(os.path.join(sys.argv[1], "p%d_%d.pkl" % (p, n)), "wb") as f:
            f.write(pickle.dumps(s, protocol=p))
        with open(os.path.join(sys.argv[1], "p%d_%d.txt" % (p, n)), "w", encoding="utf-8") as f:
            f.write(s)
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.pkl"))
	if len(files) != 28 {
		t.Fatalf("%d pickles", len(files))
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		want, _ := os.ReadFile(strings.TrimSuffix(f, ".pkl") + ".txt")
		if got, err := UnpickleString(b); err != nil || got != string(want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", filepath.Base(f), len(got), err, len(want))
		}
	}
}
