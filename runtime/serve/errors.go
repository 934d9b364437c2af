package serve

import (
	"strconv"

	"github.com/valyala/fasthttp"
)

// apiError is an error answered in OpenAI's {"error":{…}} shape. Code is
// the HTTP status, as vLLM sends it.
type apiError struct {
	Status  int
	Type    string
	Message string
	// Param names the request field at fault ("" for none).
	Param string
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: fasthttp.StatusBadRequest, Type: "BadRequestError", Param: param, Message: sprintf(format, args...)}
}

func notFound(param, msg string) *apiError {
	return &apiError{Status: fasthttp.StatusNotFound, Type: "NotFoundError", Param: param, Message: msg}
}

// appendJSON appends {"error":{"message","type","param","code"}}.
func (e *apiError) appendJSON(b []byte) []byte {
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, e.Message)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"param":`...)
	if e.Param == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.Param)
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	return append(b, "}}"...)
}

func writeError(ctx *fasthttp.RequestCtx, e *apiError) {
	// Headers set so far (X-Request-Id, Retry-After) stay.
	ctx.Response.ResetBody()
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType("application/json")
	ctx.SetBody(e.appendJSON(nil))
}
