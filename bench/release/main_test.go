package release_test

import (
	"os"
	"testing"
)

// No test reaches the real Hugging Face Hub: the ttisctl processes these
// tests start inherit an offline setting and an unreachable endpoint; the
// tests that pull use their own fake Hub (runtime/hub/hubtest).
func TestMain(m *testing.M) {
	os.Setenv("HF_HUB_OFFLINE", "1")
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Exit(m.Run())
}
