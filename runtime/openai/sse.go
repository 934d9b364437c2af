package openai

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Reader splits a server-sent-event stream into events. It follows the SSE
// framing rules that matter for OpenAI-compatible servers: events end at a
// blank line, lines starting with ':' are comments (keep-alive pings),
// several data lines of one event are joined with '\n', CRLF and LF line
// ends are both accepted. Other fields (event, id, retry) are remembered
// only as far as "event" goes.
type Reader struct {
	br   *bufio.Reader
	data []byte
	line []byte
	// event is the last "event:" field of the current event.
	event []byte
	// maxEvent bounds one event's size so a runaway stream cannot take all
	// memory.
	maxEvent int
}

// DefaultMaxEvent is the largest event a Reader accepts by default.
const DefaultMaxEvent = 16 << 20

// ErrEventTooLarge is returned for an event over the Reader's size bound.
var ErrEventTooLarge = errors.New("SSE event too large")

// NewReader reads events from r through a buffer of bufSize bytes.
func NewReader(r io.Reader, bufSize int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, bufSize), maxEvent: DefaultMaxEvent}
}

// Reset makes the Reader read from r, keeping its buffers.
func (r *Reader) Reset(src io.Reader) {
	r.br.Reset(src)
	r.data, r.event = r.data[:0], r.event[:0]
}

// Next returns the data of the next event and its event name ("" when the
// event had no "event:" field). The returned slices are valid until the next
// call. At the end of the stream it returns io.EOF; an event cut off by the
// end of the stream (no blank line after it) is dropped and reported as
// io.ErrUnexpectedEOF.
func (r *Reader) Next() (data []byte, event []byte, err error) {
	r.data, r.event = r.data[:0], r.event[:0]
	pending, hasData := false, false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && pending {
				return nil, nil, io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if pending {
				return r.data, r.event, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > r.maxEvent {
				return nil, nil, fmt.Errorf("%w (over %d bytes)", ErrEventTooLarge, r.maxEvent)
			}
			r.data = append(r.data, value...)
			pending, hasData = true, true
		case "event":
			r.event = append(r.event[:0], value...)
			pending = true
		default:
			// id, retry and unknown fields carry nothing we measure, but
			// they still belong to the event being built.
			pending = true
		}
	}
}

// readLine returns the next line without its line end. The slice is only
// valid until the next read.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer: gather it in r.line.
		r.line = append(r.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(r.line) > r.maxEvent {
				return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.maxEvent)
			}
			line, err = r.br.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			// A last line without a line end is an unterminated event.
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
