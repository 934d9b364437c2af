package cpu

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/sample"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
	"github.com/ttis-dev/ttis/runtime/grammar"
)

// benchSchema is a typical structured-output request: strings, a bounded
// integer, an enum array and a nested object.
const benchSchema = `{"type":"object","properties":{
 "name":{"type":"string","maxLength":40},
 "age":{"type":"integer","minimum":0,"maximum":150},
 "tags":{"type":"array","items":{"enum":["a","bb","ccc"]},"maxItems":4},
 "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street","city"],"additionalProperties":false}},
 "required":["name","age","tags","address"],"additionalProperties":false}`

// benchSetup writes the 24m preset in typ, opens an engine on it with
// the given threads (one sequence at a time), and compiles benchSchema.
func benchSetup(b *testing.B, typ gguf.TensorType, threads int) (*Engine, *grammar.Vocab, *grammar.Grammar) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "model.gguf")
	if err := synth.Create(path, synth.Options{Preset: "24m", Type: typ, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	e := newEngine(b, path, Options{Threads: threads, MaxSeqs: 1})
	v, err := grammar.NewVocab(e.Tokenizer())
	if err != nil {
		b.Fatal(err)
	}
	g, err := grammar.Compile(grammar.KindJSONSchema, benchSchema, grammar.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	return e, v, g
}

// BenchmarkConstrainedDecode measures what structured outputs add to a
// decode step on the 24m preset (2 threads, one sequence, temperature 1):
// each iteration generates 96 tokens unconstrained, 96 under a JSON schema
// whose token masks are cached from earlier requests (warm), and 96 under
// a fresh index that computes every mask it meets (cold), interleaved. It
// reports the median time per decode step of each (first to last token,
// prefill excluded) and the overheads, e.g.
//
//	go test -run '^$' -bench ConstrainedDecode -benchtime 15x ./runtime/cpu/
func BenchmarkConstrainedDecode(b *testing.B) {
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeF32} {
		b.Run("24m-"+strings.ToLower(typ.String()), func(b *testing.B) {
			e, v, g := benchSetup(b, typ, 2)
			index := func() *grammar.Index {
				ix, err := grammar.NewIndex(g, v, grammar.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				return ix
			}
			warm := index()
			prompt, err := e.Tokenizer().Encode("Describe a person as JSON.", true)
			if err != nil {
				b.Fatal(err)
			}
			seed := int64(0)
			const n = 96
			step := func(c runtime.Constraint) time.Duration {
				seed++
				req := &runtime.Request{Prompt: prompt, MaxTokens: n, IgnoreEOS: c == nil, Logprobs: -1, PromptLogprobs: -1,
					Sampling: runtime.Sampling{Temperature: 1, Seed: seed, HasSeed: true}, Constraint: c}
				toks, _, err := collect(b, mustGenerate(b, e, req))
				if err != nil || len(toks) < 2 {
					b.Fatalf("%d tokens: %v", len(toks), err)
				}
				return toks[len(toks)-1].Time.Sub(toks[0].Time) / time.Duration(len(toks)-1)
			}
			// Warm up the engine, and the warm index's masks as earlier
			// requests with the same schema would have.
			step(nil)
			for range 20 {
				step(warm.NewMatcher())
			}
			// Each iteration runs the three back to back, in alternating
			// order, and the overheads are the medians of the per-iteration
			// ratios: a busy machine slows neighbours alike.
			var plain, hot, cold, rw, rc []float64
			odd := false
			_, masks0 := warm.Stats()
			for b.Loop() {
				var p, w, c time.Duration
				if odd {
					c, w, p = step(index().NewMatcher()), step(warm.NewMatcher()), step(nil)
				} else {
					p, w, c = step(nil), step(warm.NewMatcher()), step(index().NewMatcher())
				}
				odd = !odd
				plain = append(plain, float64(p))
				hot = append(hot, float64(w))
				cold = append(cold, float64(c))
				rw = append(rw, float64(w)/float64(p))
				rc = append(rc, float64(c)/float64(p))
			}
			med := func(v []float64) float64 {
				slices.Sort(v)
				return v[len(v)/2]
			}
			_, masks1 := warm.Stats()
			b.ReportMetric(float64(masks1-masks0)/float64(len(plain)), "new-masks/gen-warm")
			b.ReportMetric(med(plain), "ns/step-plain")
			b.ReportMetric(med(hot), "ns/step-warm")
			b.ReportMetric(med(cold), "ns/step-cold")
			b.ReportMetric(100*(med(rw)-1), "%overhead-warm")
			b.ReportMetric(100*(med(rc)-1), "%overhead-cold")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// fixed is a constraint held at one parse state: Accept does not move it.
type fixed struct{ m *grammar.Matcher }

func (f fixed) Allowed(remaining int) ([]uint64, error) { return f.m.Allowed(remaining) }
func (f fixed) Accept(int) error                        { return nil }

// BenchmarkConstrainedSample isolates what the constraint adds to sampling
// one token from a 24m-preset logits row (32000 tokens, temperature 1):
// plain sampling, then sampling inside a JSON string (almost every token
// allowed) and between JSON tokens (few allowed), with cached masks, with
// and without logprobs (which need the row kept, so the mask goes on a
// copy). Compare with BenchmarkForward's tg128 step time.
func BenchmarkConstrainedSample(b *testing.B) {
	e, v, g := benchSetup(b, gguf.TypeQ8_0, 1)
	vocab := e.model.Cfg.Vocab
	ix, err := grammar.NewIndex(g, v, grammar.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]float32, vocab)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * 3)
	}
	work := make([]float32, vocab)
	at := func(prefix string) fixed {
		m := ix.NewMatcher()
		if ok, err := m.AcceptBytes([]byte(prefix)); !ok || err != nil {
			b.Fatalf("prefix %q: %v", prefix, err)
		}
		return fixed{m}
	}
	smp := sample.New(runtime.Sampling{Temperature: 1, Seed: 1, HasSeed: true}, vocab, nil)
	var buf []float32
	cases := []struct {
		name string
		con  runtime.Constraint
		keep bool
	}{{name: "plain"}}
	for _, c := range []struct{ name, prefix string }{
		{"in-string", `{"name":"Ali`},
		{"between-tokens", `{"name":"Ali", "age": 3, "tags":[`},
	} {
		con := at(c.prefix)
		if _, err := con.Allowed(1000); err != nil { // cache the mask
			b.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			con  runtime.Constraint
			keep bool
		}{c.name, con, false}, struct {
			name string
			con  runtime.Constraint
			keep bool
		}{c.name + "-logprobs", con, true})
	}
	// Interleaved, so that a busy machine slows every case alike.
	times := make([][]time.Duration, len(cases))
	for b.Loop() {
		for i, c := range cases {
			copy(work, row)
			start := time.Now()
			if c.con == nil {
				smp.Accept(smp.Sample(work))
			} else if _, err := sampleConstrained(smp, c.con, work, 1000, &buf, c.keep); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	base := 0.0
	for i, c := range cases {
		slices.Sort(times[i])
		m := float64(times[i][len(times[i])/2].Nanoseconds())
		b.ReportMetric(m, "ns/"+c.name)
		if i == 0 {
			base = m
		} else {
			b.ReportMetric(m-base, "ns-added/"+c.name)
		}
	}
	b.ReportMetric(0, "ns/op")
}
