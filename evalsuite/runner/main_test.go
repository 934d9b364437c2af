package runner_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a
// finished or cancelled evaluation must leave no worker behind.
//
// Ignored: regexp2's clock (runClock), which a pattern with a match
// timeout (the tasks' filters) starts and which stops by itself a second
// after the last deadline; it is the library's, shared by every pattern,
// not one per evaluation.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
}
