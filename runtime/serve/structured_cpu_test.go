package serve

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ttis-dev/ttis/runtime/cpu"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// randomModelSchemas are the ten schemas the random-weight model must
// always satisfy: objects, arrays, enums, nesting and bounded numbers.
var randomModelSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"integer","minimum":-50,"maximum":-3},"minItems":1,"maxItems":5}`,
	`{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"size":{"enum":[1,2.5,"XL",null,true]}},"required":["color","size"],"additionalProperties":false}`,
	`{"type":"object","properties":{"user":{"type":"object","properties":{"id":{"type":"integer","minimum":1},"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":6},"maxItems":3}},"required":["id","tags"],"additionalProperties":false},"active":{"type":"boolean"}},"required":["user","active"],"additionalProperties":false}`,
	`{"type":"object","properties":{"price":{"type":"number","minimum":0.5,"exclusiveMaximum":100},"ratio":{"type":"number","exclusiveMinimum":-1,"maximum":1},"score":{"type":"number","minimum":-2.25,"maximum":-2.125}},"required":["price","ratio","score"],"additionalProperties":false}`,
	`{"anyOf":[{"type":"string","pattern":"^[A-Z]{2}-[0-9]{3}$"},{"type":"null"},{"type":"integer","exclusiveMinimum":10,"exclusiveMaximum":13}]}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":0,"maximum":9},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"array","prefixItems":[{"const":"point"},{"type":"number","minimum":-1,"maximum":1},{"type":["integer","null"]}],"items":false,"minItems":3}`,
	`{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"level":{"enum":["low","high"]},"extra":{"type":"boolean"}},"required":["id","level"],"additionalProperties":false}`,
	`{"type":"object","properties":{"matrix":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":0,"maximum":99},"minItems":2,"maxItems":2},"minItems":1,"maxItems":2},"label":{"type":"string","pattern":"^[a-z]+$"}},"required":["matrix","label"],"additionalProperties":false}`,
}

// TestStructuredOutputsRandomModel asks the random-weight 24m model for
// each schema with 50 seeds (sampling at temperature 1): every answer must
// parse and validate against the schema under an independent validator.
func TestStructuredOutputsRandomModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 500 generations on the 24m model")
	}
	url := randomModelServer(t)
	const seeds = 50
	for i, schema := range randomModelSchemas {
		val := compileValidator(t, schema)
		var wg sync.WaitGroup
		errs := make(chan error, seeds)
		for seed := 0; seed < seeds; seed++ {
			wg.Add(1)
			go func(seed int) {
				defer wg.Done()
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Answer in JSON."}],"max_tokens":96,"temperature":1,"seed":%d,"response_format":{"type":"json_schema","json_schema":{"name":"s%d","strict":true,"schema":%s}}}`, seed, i, schema)
				code, v := postJSON(t, url+"/v1/chat/completions", body)
				if code != 200 {
					errs <- fmt.Errorf("seed %d: %d %v", seed, code, v)
					return
				}
				out := chatContent(t, v)
				if f := v["choices"].([]any)[0].(map[string]any)["finish_reason"]; f != "stop" {
					errs <- fmt.Errorf("seed %d: finish_reason %v: the output did not end with EOS", seed, f)
				}
				if err := validateWith(val, out); err != nil {
					errs <- fmt.Errorf("seed %d: output %q: %v", seed, out, err)
				}
			}(seed)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("schema %d %s: %v", i, schema, err)
		}
	}
}

// randomModelServer serves the random-weight 24m model (q8_0, 2 threads,
// 8 sequences) in-process.
func randomModelServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "24m.gguf")
	if err := synth.Create(path, synth.Options{Preset: "24m", Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	eng, err := cpu.New(path, cpu.Options{Name: "m", Threads: 2, MaxSeqs: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return startServer(t, Config{Model: "m", MaxConcurrency: 8, MaxQueue: 64}, eng)
}

// TestToolCallsRandomModel: with tool_choice required or a named
// function, the random-weight model's tool calls always name a declared
// function and carry arguments valid for its parameters.
func TestToolCallsRandomModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs generations on the 24m model")
	}
	url := randomModelServer(t)
	var wg sync.WaitGroup
	for seed := 0; seed < 10; seed++ {
		for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":%s,"tool_choice":%s,"max_tokens":80,"temperature":1,"seed":%d}`, weatherTools, choice, seed)
				code, a, raw := postChat(t, url, body)
				if code != 200 || len(a.Choices[0].Message.ToolCalls) == 0 {
					t.Errorf("%d %s", code, raw)
					return
				}
				if err := callsError(t, a.Choices[0].Message.ToolCalls); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
}

// validateWith parses doc and validates it.
func validateWith(val *jsonschema.Schema, doc string) error {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return err
	}
	return val.Validate(inst)
}

func compileValidator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPrefixCacheUsageAndMetrics: a prompt repeated on the cpu runtime is
// served from the prefix cache, which usage's
// prompt_tokens_details.cached_tokens and vLLM's prefix cache counters show.
func TestPrefixCacheUsageAndMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 2}); err != nil {
		t.Fatal(err)
	}
	eng, err := cpu.New(path, cpu.Options{Name: "m", Threads: 2, MaxSeqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	url := startServer(t, Config{Model: "m", MaxConcurrency: 2, MaxQueue: 8}, eng)
	body := `{"prompt":"Once upon a time there was a little girl who lived in a village near the forest.","max_tokens":4,"temperature":0}`
	usage := func() map[string]any {
		code, v := postJSON(t, url+"/v1/completions", body)
		if code != 200 {
			t.Fatalf("%d %v", code, v)
		}
		return v["usage"].(map[string]any)
	}
	if u := usage(); u["prompt_tokens_details"] != nil {
		t.Errorf("first request: usage %v, want no cached tokens", u)
	}
	u := usage()
	prompt := int(u["prompt_tokens"].(float64))
	details, _ := u["prompt_tokens_details"].(map[string]any)
	if details == nil || int(details["cached_tokens"].(float64)) != prompt-1 {
		t.Fatalf("second request: usage %v, want %d cached tokens", u, prompt-1)
	}
	code, metrics := get(t, url+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`vllm:prefix_cache_queries_total{model_name="m",engine="0"} %d`, 2*prompt),
		fmt.Sprintf(`vllm:prefix_cache_hits_total{model_name="m",engine="0"} %d`, prompt-1),
	} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
}
