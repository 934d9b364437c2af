package serve

import (
	"strings"
	"testing"
)

func TestMetricsLabelEscaping(t *testing.T) {
	m := newMetrics("a\"b\\c\nd")
	if want := `{model_name="a\"b\\c\nd",engine="0"}`; m.labels != want {
		t.Errorf("labels %s, want %s", m.labels, want)
	}
}

func TestHistogramExposition(t *testing.T) {
	m := newMetrics("m")
	for _, v := range []float64{0.0005, 0.001, 0.003, 3000} {
		m.ttft.observe(v)
	}
	text := string(m.appendText(nil))
	for _, want := range []string{
		`vllm:time_to_first_token_seconds_bucket{model_name="m",engine="0",le="0.001"} 2`,
		`vllm:time_to_first_token_seconds_bucket{model_name="m",engine="0",le="0.005"} 3`,
		`vllm:time_to_first_token_seconds_bucket{model_name="m",engine="0",le="2560"} 3`,
		`vllm:time_to_first_token_seconds_bucket{model_name="m",engine="0",le="+Inf"} 4`,
		`vllm:time_to_first_token_seconds_count{model_name="m",engine="0"} 4`,
		`vllm:time_to_first_token_seconds_sum{model_name="m",engine="0"} 3000.0045`,
		"# TYPE vllm:e2e_request_latency_seconds histogram",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}
