package vision

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/imgproc"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/nn"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/torchfile"
)

// FeatureDim is the length of an Inception feature vector (pool_3).
const FeatureDim = 2048

// inceptionSize is the side the reference resizes every image to.
const inceptionSize = 299

// bnEps is torchvision's BasicConv2d batch norm epsilon.
const bnEps = 0.001

// Inception is Inception-v3 in the variant FID is defined with
// (pytorch-fid's InceptionV3 with use_fid_inception=True, as
// tt-inference-server's utils/sdxl_accuracy_utils/inception.py copies it):
// torchvision's inception_v3 layers with FIDInceptionA/C/E_1/E_2 blocks
// (average pools that do not count the padding; a max pool in the last
// block), batch norm folded into the convolutions (eps 0.001). It is safe for
// concurrent use; calls run one at a time, each on all of the machine's
// threads.
type Inception struct {
	mu     sync.Mutex
	pool   *kernels.Pool
	convs  map[string]*nn.Conv
	dim    int
	closed bool
	// trace, when set (tests only), receives each block's output.
	trace func(name string, x []float32)
}

// OpenInception loads the FID Inception weights from path, which must be
// the published file InceptionFile (sha256 InceptionSHA256, from
// InceptionURL): a PyTorch state_dict. A missing file or one with another
// digest is an error that names the file, where it is published and its
// sha256.
func OpenInception(path string) (*Inception, error) {
	if err := checkInceptionFile(path); err != nil {
		return nil, err
	}
	return OpenInceptionUnverified(path)
}

// OpenInceptionUnverified loads Inception weights of the FID architecture
// from any state_dict file, without checking that it is the published one:
// for tests (visiontest.WriteInception) and experiments. Features computed
// with other weights are not the reference's.
func OpenInceptionUnverified(path string) (*Inception, error) {
	sd, err := torchfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("FID Inception weights: %w", err)
	}
	tensors := make(map[string][]float32, len(sd))
	shapes := make(map[string][]int, len(sd))
	for name, t := range sd {
		if strings.HasSuffix(name, ".num_batches_tracked") {
			continue // a training counter; eval mode never reads it
		}
		if t.DType != "float32" {
			return nil, fmt.Errorf("FID Inception weights %s: tensor %q is %s, want float32", path, name, t.DType)
		}
		v := make([]float32, t.Elements())
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
		tensors[name], shapes[name] = v, t.Shape
	}
	x, err := newInception(tensors, shapes)
	if err != nil {
		return nil, fmt.Errorf("FID Inception weights %s: %w", path, err)
	}
	return x, nil
}

// checkInceptionFile names what is wrong with the file at path, if
// anything: missing, or not the published bytes.
func checkInceptionFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("FID Inception weights: %s does not exist; download %s from %s (sha256 %s) and place it there", path, InceptionFile, InceptionURL, InceptionSHA256)
	}
	if err != nil {
		return fmt.Errorf("FID Inception weights: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, torchfile.MaxFile+1)); err != nil {
		return fmt.Errorf("FID Inception weights %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != InceptionSHA256 {
		return fmt.Errorf("FID Inception weights %s: sha256 %s, but the published %s (%s) has %s", path, got, InceptionFile, InceptionURL, InceptionSHA256)
	}
	return nil
}

// convSpec is one BasicConv2d of the network: its kernel, stride and
// padding (torchvision/models/inception.py; the state_dict holds only
// the weights).
type convSpec struct {
	name      string
	kh, kw, s int
	ph, pw    int
}

// inceptionConvs lists every convolution the FID blocks run.
func inceptionConvs() []convSpec {
	specs := []convSpec{
		{"Conv2d_1a_3x3", 3, 3, 2, 0, 0}, {"Conv2d_2a_3x3", 3, 3, 1, 0, 0}, {"Conv2d_2b_3x3", 3, 3, 1, 1, 1},
		{"Conv2d_3b_1x1", 1, 1, 1, 0, 0}, {"Conv2d_4a_3x3", 3, 3, 1, 0, 0},
	}
	one := func(p, n string) convSpec { return convSpec{p + "." + n, 1, 1, 1, 0, 0} }
	for _, m := range []string{"Mixed_5b", "Mixed_5c", "Mixed_5d"} { // InceptionA
		specs = append(specs, one(m, "branch1x1"), one(m, "branch5x5_1"), convSpec{m + ".branch5x5_2", 5, 5, 1, 2, 2},
			one(m, "branch3x3dbl_1"), convSpec{m + ".branch3x3dbl_2", 3, 3, 1, 1, 1}, convSpec{m + ".branch3x3dbl_3", 3, 3, 1, 1, 1},
			one(m, "branch_pool"))
	}
	specs = append(specs, convSpec{"Mixed_6a.branch3x3", 3, 3, 2, 0, 0}, one("Mixed_6a", "branch3x3dbl_1"), // InceptionB
		convSpec{"Mixed_6a.branch3x3dbl_2", 3, 3, 1, 1, 1}, convSpec{"Mixed_6a.branch3x3dbl_3", 3, 3, 2, 0, 0})
	for _, m := range []string{"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"} { // InceptionC
		specs = append(specs, one(m, "branch1x1"), one(m, "branch7x7_1"), convSpec{m + ".branch7x7_2", 1, 7, 1, 0, 3},
			convSpec{m + ".branch7x7_3", 7, 1, 1, 3, 0}, one(m, "branch7x7dbl_1"), convSpec{m + ".branch7x7dbl_2", 7, 1, 1, 3, 0},
			convSpec{m + ".branch7x7dbl_3", 1, 7, 1, 0, 3}, convSpec{m + ".branch7x7dbl_4", 7, 1, 1, 3, 0},
			convSpec{m + ".branch7x7dbl_5", 1, 7, 1, 0, 3}, one(m, "branch_pool"))
	}
	specs = append(specs, one("Mixed_7a", "branch3x3_1"), convSpec{"Mixed_7a.branch3x3_2", 3, 3, 2, 0, 0}, // InceptionD
		one("Mixed_7a", "branch7x7x3_1"), convSpec{"Mixed_7a.branch7x7x3_2", 1, 7, 1, 0, 3},
		convSpec{"Mixed_7a.branch7x7x3_3", 7, 1, 1, 3, 0}, convSpec{"Mixed_7a.branch7x7x3_4", 3, 3, 2, 0, 0})
	for _, m := range []string{"Mixed_7b", "Mixed_7c"} { // InceptionE
		specs = append(specs, one(m, "branch1x1"), one(m, "branch3x3_1"), convSpec{m + ".branch3x3_2a", 1, 3, 1, 0, 1},
			convSpec{m + ".branch3x3_2b", 3, 1, 1, 1, 0}, one(m, "branch3x3dbl_1"), convSpec{m + ".branch3x3dbl_2", 3, 3, 1, 1, 1},
			convSpec{m + ".branch3x3dbl_3a", 1, 3, 1, 0, 1}, convSpec{m + ".branch3x3dbl_3b", 3, 1, 1, 1, 0}, one(m, "branch_pool"))
	}
	return specs
}

// newInception builds the network from a state_dict's float32 tensors.
// Channel counts come from the weights and must chain; kernel sizes must
// be the architecture's. The classifier (fc) is not used by FID.
func newInception(t map[string][]float32, shapes map[string][]int) (*Inception, error) {
	used := map[string]bool{}
	get := func(name string, shape ...int) ([]float32, error) {
		used[name] = true
		v, ok := t[name]
		if !ok {
			return nil, fmt.Errorf("no tensor %q", name)
		}
		if fmt.Sprint(shapes[name]) != fmt.Sprint(shape) {
			return nil, fmt.Errorf("tensor %q has shape %v, want %v", name, shapes[name], shape)
		}
		return v, nil
	}
	x := &Inception{convs: map[string]*nn.Conv{}}
	for _, s := range inceptionConvs() {
		ws := shapes[s.name+".conv.weight"]
		if len(ws) != 4 {
			return nil, fmt.Errorf("tensor %q: shape %v, want a 4-d convolution weight", s.name+".conv.weight", ws)
		}
		out, in := ws[0], ws[1]
		w, err := get(s.name+".conv.weight", out, in, s.kh, s.kw)
		if err != nil {
			return nil, err
		}
		var bn [4][]float32
		for i, n := range []string{"weight", "bias", "running_mean", "running_var"} {
			if bn[i], err = get(s.name+".bn."+n, out); err != nil {
				return nil, err
			}
		}
		c, err := nn.NewConv(w, out, in, s.kh, s.kw, bn[0], bn[1], bn[2], bn[3], bnEps, [2]int{s.s, s.s}, [2]int{s.ph, s.pw})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		x.convs[s.name] = c
	}
	var extra []string
	for name := range t {
		if !used[name] && name != "fc.weight" && name != "fc.bias" {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		if len(extra) > 5 {
			extra = append(extra[:5], fmt.Sprintf("and %d more", len(extra)-5))
		}
		return nil, fmt.Errorf("tensors the FID Inception does not have: %v", extra)
	}
	// Run the channel arithmetic once on a 299×299 input: every
	// convolution must take what its input has.
	if err := x.checkChannels(); err != nil {
		return nil, err
	}
	x.pool = kernels.NewPool(0)
	return x, nil
}

// Features returns each image's pool_3 feature (FeatureDim values for the
// published weights), computed the way the reference's get_activations
// does with batch size 1: the image as float RGB in [0, 1] at its own
// size, bilinearly resized to 299×299 (align_corners=False, no
// antialiasing), scaled to [-1, 1]. It stops between images when ctx is
// cancelled.
func (x *Inception) Features(ctx context.Context, imgs []image.Image) ([][]float32, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, errors.New("Inception: used after Close")
	}
	out := make([][]float32, len(imgs))
	for i, img := range imgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if img == nil || img.Bounds().Empty() {
			return nil, fmt.Errorf("Inception: image %d is empty", i)
		}
		rgb := imgproc.FromImage(img)
		chw := imgproc.ResizeBilinear(imgproc.ToTensor(rgb), 3, rgb.H, rgb.W, inceptionSize, inceptionSize)
		n := inceptionSize * inceptionSize
		hwc := make([]float32, 3*n)
		for p := 0; p < n; p++ {
			for c := 0; c < 3; c++ {
				hwc[3*p+c] = 2*chw[c*n+p] - 1
			}
		}
		out[i] = x.forward(hwc, inceptionSize, inceptionSize)
	}
	return out, nil
}

// Close releases the worker threads.
func (x *Inception) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.closed {
		x.closed = true
		x.pool.Close()
	}
	return nil
}

// act is an NHWC activation.
type act struct {
	v    []float32
	h, w int
}

func (a act) c() int { return len(a.v) / (a.h * a.w) }

func (x *Inception) conv(name string, a act) act {
	v, h, w := x.convs[name].Forward(x.pool, a.v, a.h, a.w)
	return act{v, h, w}
}

func (x *Inception) chain(a act, names ...string) act {
	for _, n := range names {
		a = x.conv(n, a)
	}
	return a
}

func (x *Inception) maxPool(a act, k, s, pad int) act {
	v, h, w := nn.MaxPool(x.pool, a.v, a.h, a.w, a.c(), k, s, pad)
	return act{v, h, w}
}

func (x *Inception) avgPool(a act) act {
	return act{nn.AvgPool3(x.pool, a.v, a.h, a.w, a.c()), a.h, a.w}
}

func cat(parts ...act) act {
	vs := make([][]float32, len(parts))
	for i, p := range parts {
		vs[i] = p.v
	}
	return act{nn.Concat(parts[0].h*parts[0].w, vs...), parts[0].h, parts[0].w}
}

// forward runs pytorch-fid's blocks 0-3 on a 2x-1 scaled HWC image.
func (x *Inception) forward(img []float32, h, w int) []float32 {
	a := act{img, h, w}
	tr := func(name string, a act) {
		if x.trace != nil {
			x.trace(name, a.v)
		}
	}
	// Block 0: Conv2d_1a, 2a, 2b, max pool 3/2.
	a = x.maxPool(x.chain(a, "Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3"), 3, 2, 0)
	tr("block0", a)
	// Block 1: Conv2d_3b, 4a, max pool 3/2.
	a = x.maxPool(x.chain(a, "Conv2d_3b_1x1", "Conv2d_4a_3x3"), 3, 2, 0)
	tr("block1", a)
	// Block 2: Mixed_5b..5d (FIDInceptionA), 6a (InceptionB), 6b..6e (FIDInceptionC).
	for _, m := range []string{"Mixed_5b", "Mixed_5c", "Mixed_5d"} {
		a = cat(x.conv(m+".branch1x1", a),
			x.chain(a, m+".branch5x5_1", m+".branch5x5_2"),
			x.chain(a, m+".branch3x3dbl_1", m+".branch3x3dbl_2", m+".branch3x3dbl_3"),
			x.conv(m+".branch_pool", x.avgPool(a)))
	}
	a = cat(x.conv("Mixed_6a.branch3x3", a),
		x.chain(a, "Mixed_6a.branch3x3dbl_1", "Mixed_6a.branch3x3dbl_2", "Mixed_6a.branch3x3dbl_3"),
		x.maxPool(a, 3, 2, 0))
	for _, m := range []string{"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"} {
		a = cat(x.conv(m+".branch1x1", a),
			x.chain(a, m+".branch7x7_1", m+".branch7x7_2", m+".branch7x7_3"),
			x.chain(a, m+".branch7x7dbl_1", m+".branch7x7dbl_2", m+".branch7x7dbl_3", m+".branch7x7dbl_4", m+".branch7x7dbl_5"),
			x.conv(m+".branch_pool", x.avgPool(a)))
	}
	tr("block2", a)
	// Block 3: Mixed_7a (InceptionD), 7b (FIDInceptionE_1), 7c
	// (FIDInceptionE_2, whose pool branch takes a max pool), global mean.
	a = cat(x.chain(a, "Mixed_7a.branch3x3_1", "Mixed_7a.branch3x3_2"),
		x.chain(a, "Mixed_7a.branch7x7x3_1", "Mixed_7a.branch7x7x3_2", "Mixed_7a.branch7x7x3_3", "Mixed_7a.branch7x7x3_4"),
		x.maxPool(a, 3, 2, 0))
	for _, m := range []string{"Mixed_7b", "Mixed_7c"} {
		b3 := x.conv(m+".branch3x3_1", a)
		bd := x.chain(a, m+".branch3x3dbl_1", m+".branch3x3dbl_2")
		pool := x.avgPool(a)
		if m == "Mixed_7c" {
			pool = x.maxPool(a, 3, 1, 1)
		}
		a = cat(x.conv(m+".branch1x1", a),
			x.conv(m+".branch3x3_2a", b3), x.conv(m+".branch3x3_2b", b3),
			x.conv(m+".branch3x3dbl_3a", bd), x.conv(m+".branch3x3dbl_3b", bd),
			x.conv(m+".branch_pool", pool))
	}
	return nn.GlobalMean(a.v, a.h*a.w, a.c())
}

// checkChannels follows the channel counts through the network: each
// convolution's input channels must be what reaches it.
func (x *Inception) checkChannels() error {
	want := func(name string, have int) (int, error) {
		c := x.convs[name]
		if c.In != have {
			return 0, fmt.Errorf("%s takes %d channels, but %d reach it", name, c.In, have)
		}
		return c.Out, nil
	}
	chain := func(have int, names ...string) (int, error) {
		var err error
		for _, n := range names {
			if have, err = want(n, have); err != nil {
				return 0, err
			}
		}
		return have, nil
	}
	c, err := chain(3, "Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "Conv2d_3b_1x1", "Conv2d_4a_3x3")
	if err != nil {
		return err
	}
	sum := func(have int, branches ...[]string) (int, error) {
		total := 0
		for _, b := range branches {
			if len(b) == 0 { // a pool branch passes the channels through
				total += have
				continue
			}
			n, err := chain(have, b...)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	}
	for _, m := range []string{"Mixed_5b", "Mixed_5c", "Mixed_5d"} {
		if c, err = sum(c, []string{m + ".branch1x1"}, []string{m + ".branch5x5_1", m + ".branch5x5_2"},
			[]string{m + ".branch3x3dbl_1", m + ".branch3x3dbl_2", m + ".branch3x3dbl_3"}, []string{m + ".branch_pool"}); err != nil {
			return err
		}
	}
	if c, err = sum(c, []string{"Mixed_6a.branch3x3"}, []string{"Mixed_6a.branch3x3dbl_1", "Mixed_6a.branch3x3dbl_2", "Mixed_6a.branch3x3dbl_3"}, nil); err != nil {
		return err
	}
	for _, m := range []string{"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"} {
		if c, err = sum(c, []string{m + ".branch1x1"}, []string{m + ".branch7x7_1", m + ".branch7x7_2", m + ".branch7x7_3"},
			[]string{m + ".branch7x7dbl_1", m + ".branch7x7dbl_2", m + ".branch7x7dbl_3", m + ".branch7x7dbl_4", m + ".branch7x7dbl_5"},
			[]string{m + ".branch_pool"}); err != nil {
			return err
		}
	}
	if c, err = sum(c, []string{"Mixed_7a.branch3x3_1", "Mixed_7a.branch3x3_2"},
		[]string{"Mixed_7a.branch7x7x3_1", "Mixed_7a.branch7x7x3_2", "Mixed_7a.branch7x7x3_3", "Mixed_7a.branch7x7x3_4"}, nil); err != nil {
		return err
	}
	for _, m := range []string{"Mixed_7b", "Mixed_7c"} {
		b3, err := want(m+".branch3x3_1", c)
		if err != nil {
			return err
		}
		bd, err := chain(c, m+".branch3x3dbl_1", m+".branch3x3dbl_2")
		if err != nil {
			return err
		}
		n1, err := want(m+".branch1x1", c)
		if err != nil {
			return err
		}
		total := n1
		for _, p := range []struct {
			name string
			in   int
		}{{m + ".branch3x3_2a", b3}, {m + ".branch3x3_2b", b3}, {m + ".branch3x3dbl_3a", bd}, {m + ".branch3x3dbl_3b", bd}, {m + ".branch_pool", c}} {
			n, err := want(p.name, p.in)
			if err != nil {
				return err
			}
			total += n
		}
		c = total
	}
	x.dim = c
	return nil
}
