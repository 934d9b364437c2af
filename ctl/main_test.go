package ctl

import (
	"os"
	"testing"
)

// No test reaches the real Hugging Face Hub: commands run offline against
// an unreachable endpoint unless a test points them at its fake Hub
// (runtime/hub/hubtest) with --hf-endpoint and --offline=false.
func TestMain(m *testing.M) {
	os.Setenv("HF_HUB_OFFLINE", "1")
	// run.py's variables of the host never reach a test.
	for _, v := range []string{"HF_TOKEN", "JWT_SECRET", "SERVICE_PORT", "ONLY_BENCHMARK_TARGETS", "OVERRIDE_BENCHMARK_TARGETS", "OPENAI_API_KEY", "TTIS_HF_TOKEN_FILE"} {
		os.Unsetenv(v)
	}
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Exit(m.Run())
}
