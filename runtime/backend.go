package runtime

import "context"

// Backend is what a unit's runtime opens to serve the unit's requests: an
// engine in this process (runtime/cpu, runtime/sim) or another server the
// front door forwards to (runtime/vllm). It is the one serving contract;
// `ttisd serve` keeps one registry of open functions that return it, and
// the front door (runtime/serve) asks what a backend can do in one place,
// when it is installed.
//
// Every backend describes itself and closes. What it serves is the set of
// capability interfaces it implements:
//
//	TextGenerator  completions, chat completions, /tokenize, /detokenize,
//	               /tokenizer_info and the legacy API: the server tokenizes,
//	               the backend generates (runtime.go)
//	MediaModel     a non-LLM model (media.go), with the capability of its
//	               task: ImageGenerator, Transcriber, SpeechSynthesizer,
//	               ImageClassifier, Embedder or VideoGenerator
//	Embedder       /v1/embeddings: a media embedding model's, or a text
//	               engine's (the cpu runtime)
//	Exiter         a backend that can end on its own (a server process);
//	               its unit then ends and the supervisor restarts it
//	serve.Forwarder  every route forwarded to an OpenAI-compatible server
//	               (the vllm runtime). It is declared in runtime/serve, the
//	               one package that hands it HTTP requests.
//
// The server owns HTTP, auth, admission before work (a reading budget,
// prompts judged by their length, max_concurrency slots and a bounded
// wait queue), request validation, stop strings, n>1 fan-out, SSE framing
// and metrics, whatever the backend. A backend is never handed a request
// the server has not validated and admitted.
type Backend interface {
	// Info describes the served model. It is called often and must be
	// cheap.
	Info() Info
	// Close releases the backend's resources. In-flight requests end
	// (streams with FinishAbort, media requests with an error).
	Close() error
}

// TextGenerator generates tokens: the text capability. Implementations
// must be safe for concurrent use: the server calls Generate from many
// goroutines at once and expects the backend to batch the running
// sequences together (continuous batching).
type TextGenerator interface {
	// Tokenizer returns the backend's tokenizer; the server tokenizes
	// prompts and detokenizes output with it.
	Tokenizer() Tokenizer
	// Generate starts one sequence and returns its token stream. The
	// backend stops the sequence and closes the stream when ctx is
	// cancelled, when MaxTokens tokens were produced, when a stop token or
	// EOS is sampled (unless IgnoreEOS), or when the context window is
	// full. req satisfies Request.Check (the server has checked the
	// request's fields against the context window and vocabulary); errors
	// returned here are request errors the server could not foresee.
	Generate(ctx context.Context, req *Request) (*Stream, error)
}

// Engine is a text backend in this process: the cpu and sim runtimes'
// engines.
type Engine interface {
	Backend
	TextGenerator
}

// Exiter is implemented by a backend that can end on its own, such as a
// server process it started: Done is closed when it has, and Err says
// why. The unit's server then ends with that error.
type Exiter interface {
	Done() <-chan struct{}
	Err() error
}
