package visiontest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
)

// inceptionConv is one BasicConv2d of torchvision's Inception3 as the FID
// variant uses it: name, input and output channels, kernel.
type inceptionConv struct {
	name            string
	in, out, kh, kw int
}

// inceptionConvs lists the FID Inception's convolutions with the channel
// counts of torchvision/models/inception.py (num_classes=1008,
// aux_logits=False).
func inceptionConvs() []inceptionConv {
	cs := []inceptionConv{{"Conv2d_1a_3x3", 3, 32, 3, 3}, {"Conv2d_2a_3x3", 32, 32, 3, 3}, {"Conv2d_2b_3x3", 32, 64, 3, 3},
		{"Conv2d_3b_1x1", 64, 80, 1, 1}, {"Conv2d_4a_3x3", 80, 192, 3, 3}}
	for _, a := range []struct {
		m      string
		in, pf int
	}{{"Mixed_5b", 192, 32}, {"Mixed_5c", 256, 64}, {"Mixed_5d", 288, 64}} {
		cs = append(cs, inceptionConv{a.m + ".branch1x1", a.in, 64, 1, 1}, inceptionConv{a.m + ".branch5x5_1", a.in, 48, 1, 1},
			inceptionConv{a.m + ".branch5x5_2", 48, 64, 5, 5}, inceptionConv{a.m + ".branch3x3dbl_1", a.in, 64, 1, 1},
			inceptionConv{a.m + ".branch3x3dbl_2", 64, 96, 3, 3}, inceptionConv{a.m + ".branch3x3dbl_3", 96, 96, 3, 3},
			inceptionConv{a.m + ".branch_pool", a.in, a.pf, 1, 1})
	}
	cs = append(cs, inceptionConv{"Mixed_6a.branch3x3", 288, 384, 3, 3}, inceptionConv{"Mixed_6a.branch3x3dbl_1", 288, 64, 1, 1},
		inceptionConv{"Mixed_6a.branch3x3dbl_2", 64, 96, 3, 3}, inceptionConv{"Mixed_6a.branch3x3dbl_3", 96, 96, 3, 3})
	for _, c := range []struct {
		m  string
		c7 int
	}{{"Mixed_6b", 128}, {"Mixed_6c", 160}, {"Mixed_6d", 160}, {"Mixed_6e", 192}} {
		m, c7 := c.m, c.c7
		cs = append(cs, inceptionConv{m + ".branch1x1", 768, 192, 1, 1}, inceptionConv{m + ".branch7x7_1", 768, c7, 1, 1},
			inceptionConv{m + ".branch7x7_2", c7, c7, 1, 7}, inceptionConv{m + ".branch7x7_3", c7, 192, 7, 1},
			inceptionConv{m + ".branch7x7dbl_1", 768, c7, 1, 1}, inceptionConv{m + ".branch7x7dbl_2", c7, c7, 7, 1},
			inceptionConv{m + ".branch7x7dbl_3", c7, c7, 1, 7}, inceptionConv{m + ".branch7x7dbl_4", c7, c7, 7, 1},
			inceptionConv{m + ".branch7x7dbl_5", c7, 192, 1, 7}, inceptionConv{m + ".branch_pool", 768, 192, 1, 1})
	}
	cs = append(cs, inceptionConv{"Mixed_7a.branch3x3_1", 768, 192, 1, 1}, inceptionConv{"Mixed_7a.branch3x3_2", 192, 320, 3, 3},
		inceptionConv{"Mixed_7a.branch7x7x3_1", 768, 192, 1, 1}, inceptionConv{"Mixed_7a.branch7x7x3_2", 192, 192, 1, 7},
		inceptionConv{"Mixed_7a.branch7x7x3_3", 192, 192, 7, 1}, inceptionConv{"Mixed_7a.branch7x7x3_4", 192, 192, 3, 3})
	for _, e := range []struct {
		m  string
		in int
	}{{"Mixed_7b", 1280}, {"Mixed_7c", 2048}} {
		m, in := e.m, e.in
		cs = append(cs, inceptionConv{m + ".branch1x1", in, 320, 1, 1}, inceptionConv{m + ".branch3x3_1", in, 384, 1, 1},
			inceptionConv{m + ".branch3x3_2a", 384, 384, 1, 3}, inceptionConv{m + ".branch3x3_2b", 384, 384, 3, 1},
			inceptionConv{m + ".branch3x3dbl_1", in, 448, 1, 1}, inceptionConv{m + ".branch3x3dbl_2", 448, 384, 3, 3},
			inceptionConv{m + ".branch3x3dbl_3a", 384, 384, 1, 3}, inceptionConv{m + ".branch3x3dbl_3b", 384, 384, 3, 1},
			inceptionConv{m + ".branch_pool", in, 192, 1, 1})
	}
	return cs
}

// InceptionTensors lists the float32 tensors of a FID Inception
// state_dict (the num_batches_tracked counters left out), sorted by name:
// convolution weights uniform with He's variance, batch norms near the
// identity, running variances in [0.5, 1.5).
func InceptionTensors() []Tensor {
	var ts []Tensor
	for _, c := range inceptionConvs() {
		ts = append(ts, Tensor{Name: c.name + ".conv.weight", Shape: []int{c.out, c.in, c.kh, c.kw}, Scale: math.Sqrt(6 / float64(c.in*c.kh*c.kw))},
			Tensor{Name: c.name + ".bn.weight", Shape: []int{c.out}, Offset: 1, Scale: 0.2},
			Tensor{Name: c.name + ".bn.bias", Shape: []int{c.out}, Scale: 0.1},
			Tensor{Name: c.name + ".bn.running_mean", Shape: []int{c.out}, Scale: 0.1},
			Tensor{Name: c.name + ".bn.running_var", Shape: []int{c.out}, Offset: 1, Scale: 0.5})
	}
	ts = append(ts, Tensor{Name: "fc.weight", Shape: []int{1008, 2048}, Scale: 0.01}, Tensor{Name: "fc.bias", Shape: []int{1008}, Scale: 0.01})
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// WriteInception writes tensors as a state_dict in torch.save's zip
// format (what torch 1.6 and later write): ARCHIVE/data.pkl, a protocol 2
// pickle of an OrderedDict of _rebuild_tensor_v2 calls on persistent
// storage ids, and each storage's bytes in ARCHIVE/data/KEY, stored.
func WriteInception(path string, tensors []Tensor) error {
	var pkl bytes.Buffer
	w := &pickleWriter{b: &pkl}
	pkl.WriteString("\x80\x02")
	w.global("collections", "OrderedDict")
	pkl.WriteString(")R(") // EMPTY_TUPLE REDUCE MARK
	var blobs [][]byte
	for i, t := range tensors {
		vals := t.Values()
		blob := make([]byte, 4*len(vals))
		for j, v := range vals {
			binary.LittleEndian.PutUint32(blob[4*j:], math.Float32bits(v))
		}
		blobs = append(blobs, blob)
		w.str(t.Name)
		w.global("torch._utils", "_rebuild_tensor_v2")
		pkl.WriteString("(") // the call's arguments
		pkl.WriteString("(") // the persistent id
		w.str("storage")
		w.global("torch", "FloatStorage")
		w.str(strconv.Itoa(i))
		w.str("cpu")
		w.int(len(vals))
		pkl.WriteString("tQ") // TUPLE BINPERSID
		w.int(0)
		stride := make([]int, len(t.Shape))
		acc := 1
		for d := len(t.Shape) - 1; d >= 0; d-- {
			stride[d] = acc
			acc *= t.Shape[d]
		}
		w.tuple(t.Shape)
		w.tuple(stride)
		pkl.WriteString("\x89") // NEWFALSE: requires_grad
		w.global("collections", "OrderedDict")
		pkl.WriteString(")R") // backward hooks
		pkl.WriteString("tR") // TUPLE REDUCE
	}
	pkl.WriteString("u.") // SETITEMS STOP
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	put := func(name string, data []byte) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return err
	}
	if err := put("archive/data.pkl", pkl.Bytes()); err != nil {
		return err
	}
	for i, b := range blobs {
		if err := put(fmt.Sprintf("archive/data/%d", i), b); err != nil {
			return err
		}
	}
	if err := put("archive/version", []byte("3\n")); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, z.Bytes(), 0o644)
}

// pickleWriter writes the few pickle opcodes WriteInception needs.
type pickleWriter struct{ b *bytes.Buffer }

func (w *pickleWriter) global(mod, name string) { fmt.Fprintf(w.b, "c%s\n%s\n", mod, name) }

func (w *pickleWriter) str(s string) {
	w.b.WriteByte('X')
	_ = binary.Write(w.b, binary.LittleEndian, uint32(len(s)))
	w.b.WriteString(s)
}

func (w *pickleWriter) int(n int) {
	w.b.WriteByte('J')
	_ = binary.Write(w.b, binary.LittleEndian, int32(n))
}

func (w *pickleWriter) tuple(v []int) {
	w.b.WriteByte('(')
	for _, n := range v {
		w.int(n)
	}
	w.b.WriteByte('t')
}
