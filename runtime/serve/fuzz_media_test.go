package serve

import (
	"bytes"
	"mime/multipart"
	"testing"
)

// FuzzParseForm: multipart parsing never panics, never returns a file
// part over its limit, and refuses unknown fields.
func FuzzParseForm(f *testing.F) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.SetBoundary("b0undary")
	_ = w.WriteField("model", "m")
	fw, _ := w.CreateFormFile("file", "a.wav")
	_, _ = fw.Write([]byte("RIFF...."))
	_ = w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("--b0undary\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n" + string(make([]byte, 300)) + "\r\n--b0undary--\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		form, e := parseForm(body, []byte("multipart/form-data; boundary=b0undary"), transcribeFields, map[string]int64{"file": 256})
		if e != nil {
			if e.Status != 400 && e.Status != 413 {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if len(form.files["file"]) > 256 {
			t.Fatalf("file part of %d bytes over its 256-byte limit", len(form.files["file"]))
		}
		for k := range form.fields {
			if !transcribeFields[k] {
				t.Fatalf("unknown field %q accepted", k)
			}
		}
	})
}

// FuzzEmbeddingInput: input parsing never panics and never returns an
// empty or oversized list.
func FuzzEmbeddingInput(f *testing.F) {
	f.Add([]byte(`"hello"`))
	f.Add([]byte(`["a","b"]`))
	f.Add([]byte(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, e := parseEmbeddingInput(raw)
		if e == nil && (len(in) == 0 || len(in) > maxEmbeddingInputs) {
			t.Fatalf("%d inputs", len(in))
		}
	})
}
