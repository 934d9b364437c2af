package serve

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strings"

	"github.com/valyala/fasthttp"
)

// form is a parsed multipart/form-data body: its text fields and its file
// parts (by field name).
type form struct {
	fields map[string]string
	files  map[string][]byte
}

// isMultipart reports whether a request body is multipart/form-data.
func isMultipart(contentType []byte) bool {
	mt, _, err := mime.ParseMediaType(string(contentType))
	return err == nil && mt == "multipart/form-data"
}

// parseForm reads a multipart/form-data body. Field names must be in
// allowed (a name ending in "[]" may repeat; its values are joined with
// commas); fileLimits gives the largest file part per field name. Every
// part is read through a limit, so a part over its limit costs at most
// the limit plus one byte; the whole body is already bounded by
// limits.max_body_bytes.
func parseForm(body, contentType []byte, allowed map[string]bool, fileLimits map[string]int64) (*form, *apiError) {
	_, params, err := mime.ParseMediaType(string(contentType))
	if err != nil || params["boundary"] == "" {
		return nil, badRequest("", "multipart body without a boundary in its Content-Type")
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	f := &form{fields: map[string]string{}, files: map[string][]byte{}}
	for n := 0; ; n++ {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, badRequest("", "malformed multipart body: %v", err)
		}
		if n >= maxMultipartParts {
			return nil, badRequest("", "the multipart body has more than %d parts", maxMultipartParts)
		}
		name := p.FormName()
		if !allowed[name] {
			return nil, badRequest(name, "unsupported form field %q", name)
		}
		limit, isFile := fileLimits[name]
		if !isFile {
			limit = maxFieldBytes
		}
		data, err := io.ReadAll(io.LimitReader(p, limit+1))
		if err != nil {
			return nil, badRequest(name, "malformed multipart part %q: %v", name, err)
		}
		if int64(len(data)) > limit {
			return nil, &apiError{Status: fasthttp.StatusRequestEntityTooLarge, Type: "BadRequestError", Param: name,
				Message: sprintf("form field %q exceeds its limit of %d bytes", name, limit)}
		}
		if isFile {
			if _, dup := f.files[name]; dup {
				return nil, badRequest(name, "form field %q is given twice", name)
			}
			f.files[name] = data
			continue
		}
		if old, dup := f.fields[name]; dup {
			if !strings.HasSuffix(name, "[]") {
				return nil, badRequest(name, "form field %q is given twice", name)
			}
			f.fields[name] = old + "," + string(data)
			continue
		}
		f.fields[name] = string(data)
	}
}
