package vllm

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a
// stopped server's process waiter, log readers and proxy connections must
// all end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
