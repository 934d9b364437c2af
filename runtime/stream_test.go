package runtime

import (
	"context"
	"errors"
	"testing"
)

func TestStreamDeliversInOrderThenEnds(t *testing.T) {
	st := NewStream(3)
	takes := 0
	st.SetOnTaken(func() { takes++ })
	ctx := context.Background()
	st.Push(Token{ID: 1})
	st.Push(Token{ID: 2})
	toks, done, _, err := st.Recv(ctx, nil)
	if err != nil || done || len(toks) != 2 || toks[0].ID != 1 || toks[1].ID != 2 {
		t.Fatalf("first Recv = %v, done %v, err %v; want tokens 1 2", toks, done, err)
	}
	if takes != 1 {
		t.Errorf("OnTaken calls after one take of two tokens = %d, want 1", takes)
	}
	st.Push(Token{ID: 3})
	st.Finish(FinishLength, nil)
	st.Push(Token{ID: 4}) // after Finish: ignored
	toks, done, _, _ = st.Recv(ctx, toks[:0])
	if done || len(toks) != 1 || toks[0].ID != 3 {
		t.Fatalf("second Recv = %v, done %v; want token 3, not done", toks, done)
	}
	toks, done, reason, err := st.Recv(ctx, toks[:0])
	if !done || len(toks) != 0 || reason != FinishLength || err != nil {
		t.Fatalf("last Recv = %v, done %v, reason %v, err %v; want done with length", toks, done, reason, err)
	}
	if takes != 2 {
		t.Errorf("OnTaken calls = %d, want 2 (the end is not a take)", takes)
	}
	if st.PromptTokens() != 3 {
		t.Errorf("PromptTokens = %d, want 3", st.PromptTokens())
	}
}

func TestStreamRecvEndsWithContext(t *testing.T) {
	st := NewStream(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, done, _, err := st.Recv(ctx, nil); done || !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv on a cancelled context = done %v, err %v; want context.Canceled", done, err)
	}
	abort := errors.New("engine closed")
	st.Finish(FinishAbort, abort)
	st.Finish(FinishStop, nil) // only the first Finish counts
	if _, done, reason, err := st.Recv(context.Background(), nil); !done || reason != FinishAbort || err != abort {
		t.Fatalf("Recv after Finish(abort) = done %v, reason %v, err %v", done, reason, err)
	}
}
