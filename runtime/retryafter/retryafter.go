// Package retryafter reads the Retry-After header (RFC 9110 section
// 10.2.3) for every HTTP client of ttis: the OpenAI client
// (runtime/openai) that benchmarks and evals send through, and the
// Hugging Face Hub client (runtime/hub). Each caller states the longest
// wait it accepts, since a server's header is another party's input.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Retry-After value, delay-seconds or an HTTP date, as the
// wait from now, capped at limit (a non-positive limit allows no wait).
// A date in the past is a wait of 0. ok is false when v is empty or is
// neither form; a negative number of seconds is not a delay.
func Parse(v string, now time.Time, limit time.Duration) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	limit = max(limit, 0)
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		// Compare in seconds first: n*time.Second overflows past 292
		// years, which would turn a huge delay into a negative wait,
		// "retry at once", the opposite of what it asks.
		if err != nil || n > int64(limit/time.Second) {
			return limit, true
		}
		return min(time.Duration(n)*time.Second, limit), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), limit), true
}

// isDigits reports whether s is one or more ASCII digits (delay-seconds
// has no sign, point or exponent).
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
