package container

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
)

func TestBuildOptions(t *testing.T) {
	spec, err := catalog.Lookup("Llama-3.1-8B-Instruct", "n300")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(spec, Options{
		Name: "c", ImageUser: "1234", DeviceIDs: []int{0, 1}, BindHost: "127.0.0.1", ServicePort: 9000,
		HostVolume: "/v", HostWeightsDir: "/w/Llama-3.1-8B-Instruct/", NoAuth: true, DisableTraceCapture: true,
		DisableMetalTimeout: true, Image: "img:1", VllmArgs: map[string]any{"enable_auto_tool_choice": true, "x": false, "o": map[string]any{"a": 1.5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.Argv, " ")
	want := "docker run --rm --name c --user 1234 --ipc host --device /dev/tenstorrent/0:/dev/tenstorrent/0 --device /dev/tenstorrent/1:/dev/tenstorrent/1" +
		" --mount type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G --publish 127.0.0.1:9000:9000" +
		" --mount type=bind,src=/v,dst=/home/container_app_user/cache_root" +
		" --mount type=bind,src=/w/Llama-3.1-8B-Instruct/,dst=/home/container_app_user/readonly_weights_mount/Llama-3.1-8B-Instruct,readonly" +
		" -e MODEL_WEIGHTS_DIR=/home/container_app_user/readonly_weights_mount/Llama-3.1-8B-Instruct" +
		" -e TT_CACHE_PATH=/home/container_app_user/cache_root/tt_metal_cache/cache_Llama-3.1-8B-Instruct/N300" +
		" -e DISABLE_METAL_OP_TIMEOUT=1 img:1 --model meta-llama/Llama-3.1-8B-Instruct --tt-device n300 --no-auth --disable-trace-capture" +
		` --service-port 9000 --enable-auto-tool-choice --o {"a": 1.5}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBuildRefusesMultiHostAndCPU(t *testing.T) {
	for _, s := range catalog.Specs() {
		dev, err := catalog.Device(s.Device)
		if err != nil || !(dev.Multihost || !dev.Hardware()) {
			continue
		}
		if _, err := Build(&s, Options{}); err == nil {
			t.Errorf("%s: planned a single-host container", s.ModelID)
		}
	}
}

func TestMergeTTConfig(t *testing.T) {
	base := map[string]any{"a": 1, "b": "x"}
	got := MergeTTConfig(base, map[string]any{"b": nil, "c": true})
	if !reflect.DeepEqual(got, map[string]any{"a": 1, "c": true}) {
		t.Errorf("merge = %v", got)
	}
	if _, ok := base["c"]; ok {
		t.Error("merge changed its base")
	}
}

func TestFormatAndQuote(t *testing.T) {
	got := Format([]string{"docker", "run", "--rm", "--name", "n", "-e", "A=b c", "img", "--x", `{"a": 1}`, "--flag"})
	want := "docker run \\\n  --rm \\\n  --name n \\\n  -e 'A=b c' \\\n  img \\\n  --x '{\"a\": 1}' \\\n  --flag"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if q := shellQuote("it's"); q != `'it'"'"'s'` {
		t.Errorf("quote = %s", q)
	}
}

func TestRedact(t *testing.T) {
	in := []string{"docker", "-e", "HF_TOKEN=abc", "-e", "TT_X=1", "--env", "JWT_SECRET=s", "img"}
	got := Redact(in)
	if slices.Contains(got, "HF_TOKEN=abc") || slices.Contains(got, "JWT_SECRET=s") || !slices.Contains(got, "TT_X=1") {
		t.Errorf("redact = %v", got)
	}
	if in[2] != "HF_TOKEN=abc" {
		t.Error("Redact changed its input")
	}
}

func TestPythonJSON(t *testing.T) {
	got := PythonJSON(map[string]any{"tt": map[string]any{"b": 100000.0, "a": 1e-5, "c": "é\x7f\"", "d": []any{int64(1), true, nil}}})
	// python3 -c 'import json;print(json.dumps({"tt":{"a":1e-5,"b":100000.0,"c":"é\x7f\"","d":[1,True,None]}}))'
	want := `{"tt": {"a": 1e-05, "b": 100000.0, "c": "\u00e9\u007f\"", "d": [1, true, null]}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// FuzzPythonJSON checks that the Python-style writer produces JSON that
// decodes to the value it was given.
func FuzzPythonJSON(f *testing.F) {
	f.Add(`{"a": [1, 2.5, "x\u00e9"], "b": {"c": null, "d": true}}`)
	f.Add(`"\ud83d\ude00 \n"`)
	f.Fuzz(func(t *testing.T, in string) {
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		var back any
		if err := json.Unmarshal([]byte(PythonJSON(v)), &back); err != nil {
			t.Fatalf("PythonJSON(%q) = %q is not JSON: %v", in, PythonJSON(v), err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("round trip of %q: %#v != %#v", in, back, v)
		}
	})
}
