package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
)

// F32Tensor is a float32 tensor to write.
type F32Tensor struct {
	Shape []int
	Data  []float32
}

// Write writes tensors (keyed by name) as a safetensors file of F32
// tensors in name order, the header padded with spaces to 8 bytes as the
// reference writer does. It is for tests and fixtures.
func Write(w io.Writer, tensors map[string]F32Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	if metadata != nil {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, n := range names {
		t := tensors[n]
		count := 1
		for _, d := range t.Shape {
			count *= d
		}
		if count != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: shape %v holds %d values, data has %d", n, t.Shape, count, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[n] = map[string]any{"dtype": F32, "shape": shape, "data_offsets": []int64{off, off + 4*int64(count)}}
		off += 4 * int64(count)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	buf := make([]byte, 8, 8+len(h)+int(off))
	binary.LittleEndian.PutUint64(buf, uint64(len(h)))
	buf = append(buf, h...)
	for _, n := range names {
		for _, v := range tensors[n].Data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	_, err = w.Write(buf)
	return err
}
