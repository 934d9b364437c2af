package sim

import (
	"context"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
)

// pacer is an Engine with only the time_scale 0 pacing state, no loop: the
// test plays the loop's part by calling owe and waitTaken itself.
func pacer(t *testing.T) *Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &Engine{taken: make(chan struct{}, 1), loopCtx: ctx}
	e.epoch.Store(1)
	e.untaken[1%window].Store(1 << countBits)
	return e
}

// owedAt is how many streams the engine counts as owing output from step
// ep, or -1 when ep's slot has been reused.
func owedAt(e *Engine, ep uint64) int {
	v := e.untaken[ep%window].Load()
	if v>>countBits != ep {
		return -1
	}
	return int(v & (1<<countBits - 1))
}

// began waits for a waitTaken started by waitAsync to return nil; what
// says which step should have begun.
func began(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not begin", what)
	}
}

// waitAsync runs waitTaken in a goroutine and returns its result channel.
func waitAsync(e *Engine) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.waitTaken() }()
	return done
}

func TestPacingWaitsForTheStepWindowBack(t *testing.T) {
	e := pacer(t)
	a, b := &sequence{}, &sequence{}
	// Step 1 gives both streams output.
	e.owe(a)
	e.owe(b)
	// Step 2 may start at once: nothing from window steps back is owed.
	if err := e.waitTaken(); err != nil {
		t.Fatal(err)
	}
	if got := e.epoch.Load(); got != 2 {
		t.Fatalf("epoch after the first wait = %d, want 2", got)
	}
	// a gets more output while its step-1 output is still untaken: that
	// is one owed batch, not two.
	e.owe(a)
	if got, want := [2]int{owedAt(e, 1), owedAt(e, 2)}, [2]int{2, 0}; got != want {
		t.Fatalf("owed at steps 1, 2 = %v, want %v", got, want)
	}
	// Step 3 reuses step 1's slot, so it waits for a and b.
	done := waitAsync(e)
	e.tookOutput(a)
	if got := owedAt(e, 1); got != 1 {
		t.Fatalf("owed at step 1 after a took = %d, want 1", got)
	}
	select {
	case err := <-done:
		t.Fatalf("step 3 began (err %v) before b took its step-1 output", err)
	default:
	}
	e.tookOutput(b)
	if got := owedAt(e, 1); got != 0 {
		t.Fatalf("owed at step 1 after both took = %d, want 0", got)
	}
	began(t, done, "step 3, after every stream took its output,")
	if a.owed.Load() != 0 || b.owed.Load() != 0 {
		t.Errorf("owed after the takes: a %d, b %d, want 0", a.owed.Load(), b.owed.Load())
	}
}

func TestPacingGoesOnWithoutAStuckConsumer(t *testing.T) {
	e := pacer(t)
	stuck, live := &sequence{}, &sequence{}
	e.owe(stuck)
	if err := e.waitTaken(); err != nil { // step 2
		t.Fatal(err)
	}
	// Step 3 waits for stuck, which never takes: it begins after
	// maxHostWait anyway.
	began(t, waitAsync(e), "step 3, waiting on a consumer that never takes,")
	// Step 3's output for live shares the slot stuck's late take points
	// at; that take must not settle live's count.
	e.owe(live)
	e.tookOutput(stuck)
	if got := owedAt(e, 3); got != 1 {
		t.Fatalf("owed at step 3 after a stale take = %d, want 1 (live's)", got)
	}
	if err := e.waitTaken(); err != nil { // step 4 (slot of step 2: empty)
		t.Fatal(err)
	}
	done := waitAsync(e) // step 5 waits for live's step-3 output
	select {
	case err := <-done:
		t.Fatalf("step 5 began (err %v) although live has not taken; the stale take counted", err)
	default:
	}
	e.tookOutput(live)
	began(t, done, "step 5, after live took its output,")
}

func TestPacingEndsWithTheEngine(t *testing.T) {
	e := pacer(t)
	ctx, cancel := context.WithCancel(context.Background())
	e.loopCtx = ctx
	e.owe(&sequence{})
	if err := e.waitTaken(); err != nil {
		t.Fatal(err)
	}
	done := waitAsync(e)
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("waitTaken after the engine closed = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitTaken did not return when the engine closed")
	}
}

// At time_scale 0 a consumer that stops reading does not stop the others,
// and every stream still gets all its tokens.
func TestTimeScaleZeroWithASlowConsumer(t *testing.T) {
	e, err := New(Config{Model: "m", MaxContext: 4096, MaxConcurrency: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n = 40
	ctx := context.Background()
	req := func() *runtime.Request {
		return &runtime.Request{Prompt: []int{bosID, 10}, MaxTokens: n, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1}
	}
	slow, err := e.Generate(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := e.Generate(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	count := func(st *runtime.Stream) int {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		got := 0
		var buf []runtime.Token
		for range n + 10 {
			toks, done, reason, err := st.Recv(rctx, buf[:0])
			if err != nil {
				t.Fatalf("recv: %v", err)
			}
			got += len(toks)
			if done {
				if reason != runtime.FinishLength {
					t.Errorf("finish reason %v, want length", reason)
				}
				return got
			}
		}
		t.Fatal("stream did not end")
		return got
	}
	if got := count(fast); got != n {
		t.Errorf("fast consumer got %d tokens, want %d", got, n)
	}
	if got := count(slow); got != n {
		t.Errorf("slow consumer got %d tokens, want %d", got, n)
	}
}
