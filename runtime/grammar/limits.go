package grammar

import (
	"errors"
	"fmt"
	"time"
)

// Limits bound what compiling a grammar and matching with it may take, so
// that a hostile or careless schema, regular expression or grammar is
// refused with a clear error instead of exhausting the server. Zero fields
// take the defaults below.
type Limits struct {
	// MaxSourceBytes bounds the schema, grammar or pattern text.
	MaxSourceBytes int
	// MaxDepth bounds the nesting of a JSON schema (and of groups in a
	// grammar or pattern).
	MaxDepth int
	// MaxRepeat bounds a counted repetition: {m,n} in a grammar or
	// pattern, minItems/maxItems and minLength/maxLength in a schema.
	MaxRepeat int
	// MaxElements bounds the size of the lowered grammar (rule elements
	// after repetitions are expanded).
	MaxElements int
	// Timeout bounds the compile's wall time.
	Timeout time.Duration
	// MaxStates bounds the parser states one vocabulary index keeps (each
	// costs about 1 KiB of transitions), and MaxStacks the parse stacks.
	MaxStates int
	MaxStacks int
	// MaxMaskBytes bounds the token masks one vocabulary index caches;
	// beyond it the oldest are dropped and recomputed when needed.
	MaxMaskBytes int
}

// Defaults for zero Limits fields.
const (
	DefaultMaxSourceBytes = 256 << 10
	DefaultMaxDepth       = 64
	DefaultMaxRepeat      = 4096
	DefaultMaxElements    = 200_000
	DefaultTimeout        = 2 * time.Second
	DefaultMaxStates      = 64 << 10
	DefaultMaxStacks      = 1 << 20
	DefaultMaxMaskBytes   = 32 << 20
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSourceBytes, DefaultMaxSourceBytes)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxRepeat, DefaultMaxRepeat)
	def(&l.MaxElements, DefaultMaxElements)
	def(&l.MaxStates, DefaultMaxStates)
	def(&l.MaxStacks, DefaultMaxStacks)
	def(&l.MaxMaskBytes, DefaultMaxMaskBytes)
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Error kinds, for errors.Is.
var (
	// ErrSyntax: the schema, grammar or pattern does not parse.
	ErrSyntax = errors.New("syntax error")
	// ErrUnsupported: it uses a feature constrained decoding cannot honour.
	ErrUnsupported = errors.New("not supported")
	// ErrUnsatisfiable: no output can ever satisfy it.
	ErrUnsatisfiable = errors.New("cannot be satisfied")
	// ErrLimit: compiling or matching it would exceed a limit.
	ErrLimit = errors.New("limit exceeded")
)

// Error is a compile error: Kind is one of the Err* values, Where points at
// the problem (a JSON pointer into a schema such as "#/properties/age", a
// grammar rule name, or "line:col").
type Error struct {
	Kind  error
	Where string
	Msg   string
}

func (e *Error) Error() string {
	if e.Where == "" {
		return e.Msg
	}
	return e.Where + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, where, format string, args ...any) *Error {
	return &Error{Kind: kind, Where: where, Msg: fmt.Sprintf(format, args...)}
}

// budget counts compile work against the limits.
type budget struct {
	lim      Limits
	deadline time.Time
	steps    int
}

func newBudget(lim Limits) *budget {
	lim = lim.withDefaults()
	return &budget{lim: lim, deadline: time.Now().Add(lim.Timeout)}
}

// tick is called in every compile loop; it checks the clock every few
// thousand steps.
func (b *budget) tick() error {
	b.steps++
	if b.steps&4095 == 0 && time.Now().After(b.deadline) {
		return errorf(ErrLimit, "", "compiling took longer than the limit of %s", b.lim.Timeout)
	}
	return nil
}
