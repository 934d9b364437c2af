package serve

import (
	"strings"
)

// On an upstream runtime (vllm), a route the front door does not implement
// is passed to the upstream rather than refused, so that everything vLLM
// serves (/v1/embeddings, /v1/responses, /v1/audio/transcriptions,
// /v1/score, /v1/rerank, /pooling, /classify, ...) reaches it. Auth,
// draining and admission stay in front: a POST takes an engine slot like a
// completion (the upstream's work is the chips' work), and is counted in
// the queue and latency metrics. Engine runtimes keep answering 404.

// passthroughPrefixes are the path families passed through: the versioned
// OpenAI-style APIs and vLLM's unversioned pooling routes.
var passthroughPrefixes = []string{"/v1/", "/v2/"}

var passthroughExact = []string{"/pooling", "/classify", "/score", "/rerank", "/invocations"}

// adminRoutes change the upstream's state for every client (LoRA adapters,
// caches, sleep, profiling): a unit's API clients must not reach them.
var adminRoutes = []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter"}

func isAdminRoute(path string) bool {
	for _, a := range adminRoutes {
		if path == a {
			return true
		}
	}
	return false
}

// passthroughRoute reports whether path is one the upstream may serve.
func passthroughRoute(path string) bool {
	if isAdminRoute(path) {
		return false
	}
	for _, p := range passthroughExact {
		if path == p {
			return true
		}
	}
	for _, p := range passthroughPrefixes {
		if strings.HasPrefix(path, p) && len(path) > len(p) {
			return true
		}
	}
	return false
}
