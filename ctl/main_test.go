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
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Exit(m.Run())
}
