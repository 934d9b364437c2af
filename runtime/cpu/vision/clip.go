package vision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/clipbpe"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/imgproc"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/nn"
	"github.com/ttis-dev/ttis/runtime/cpu/vision/internal/safetensors"
)

// CLIP is OpenAI's CLIP (ViT image tower, causal text tower, BPE
// tokenizer) as tt-inference-server scores images with it: see the package
// comment for the exact model and preprocessing. It is safe for concurrent
// use; calls run one at a time, each on all of the machine's threads.
type CLIP struct {
	mu      sync.Mutex
	pool    *kernels.Pool
	weights *safetensors.File
	tok     *clipbpe.Tokenizer
	vision  *vitTower
	text    *textTower
	closed  bool
}

// OpenAI's image statistics (open_clip constants.py OPENAI_DATASET_MEAN
// and OPENAI_DATASET_STD), which the "openai" pretrained tag normalises with.
var (
	clipMean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	clipStd  = [3]float32{0.26862954, 0.26130258, 0.27577711}
)

// imageBatch bounds the images one forward pass of the vision tower
// carries (50 tokens each): enough rows to keep the GEMM tiles busy.
const imageBatch = 8

// OpenCLIP loads a CLIP checkpoint in the layout transformers publishes
// (the folder PullCLIP returns): config.json, model.safetensors, vocab.json
// and merges.txt (preprocessor_config.json and the tokenizer's JSON files
// may be there; they are not read, because the reference's preprocessing
// is open_clip's, fixed in code). The weights are mapped, not copied.
func OpenCLIP(dir string) (_ *CLIP, err error) {
	cfg, err := readCLIPConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	tok, err := clipbpe.Load(filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt"))
	if err != nil {
		return nil, fmt.Errorf("CLIP tokenizer: %w", err)
	}
	wpath := filepath.Join(dir, "model.safetensors")
	wf, err := safetensors.Open(wpath)
	if err != nil {
		return nil, fmt.Errorf("CLIP weights: %w", err)
	}
	defer func() {
		if err != nil {
			wf.Close()
		}
	}()
	c := &CLIP{weights: wf, tok: tok}
	w := &tensorReader{f: wf, used: map[string]bool{}}
	if c.vision, err = loadViT(w, cfg); err != nil {
		return nil, err
	}
	if c.text, err = loadTextTower(w, cfg); err != nil {
		return nil, err
	}
	if err := w.checkAllUsed("logit_scale", "text_model.embeddings.position_ids", "vision_model.embeddings.position_ids"); err != nil {
		return nil, err
	}
	if n := tok.VocabSize(); n > c.text.vocab {
		return nil, fmt.Errorf("CLIP tokenizer: vocab.json has %d tokens, the text tower's embedding %d", n, c.text.vocab)
	}
	c.pool = kernels.NewPool(0)
	return c, nil
}

// setTrace sends every traced activation to f (tests compare them with
// PyTorch's, layer by layer).
func (c *CLIP) setTrace(f func(name string, x []float32)) {
	c.vision.enc.trace = f
	c.text.enc.trace = f
}

// EncodeImages returns each image's image embedding: the projected class
// token of the vision tower (open_clip's encode_image), not normalised,
// computed after the reference's resize, crop and normalisation. It stops
// between batches of images when ctx is cancelled.
func (c *CLIP) EncodeImages(ctx context.Context, imgs []image.Image) ([][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("CLIP: used after Close")
	}
	out := make([][]float32, 0, len(imgs))
	for start := 0; start < len(imgs); start += imageBatch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := imgs[start:min(start+imageBatch, len(imgs))]
		pixels := make([][]float32, len(batch))
		for i, img := range batch {
			if img == nil || img.Bounds().Empty() {
				return nil, fmt.Errorf("CLIP: image %d is empty", start+i)
			}
			pixels[i] = c.vision.preprocess(imgproc.FromImage(img))
		}
		out = append(out, c.vision.forward(c.pool, pixels)...)
	}
	return out, nil
}

// EncodeTexts returns each text's text embedding: the projected final
// state at the end token (open_clip's encode_text), not normalised, after
// open_clip.tokenize's cleaning, BPE and truncation to 77 tokens. Text that
// ftfy would repair as mojibake is the exception (see clipbpe.FixText in
// the package's internals): its cleaning differs. It stops between texts
// when ctx is cancelled.
func (c *CLIP) EncodeTexts(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("CLIP: used after Close")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = c.text.forward(c.pool, c.tok.Tokenize(t))
	}
	return out, nil
}

// Close releases the weights and the worker threads.
func (c *CLIP) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.pool.Close()
	return c.weights.Close()
}

// Score is the CLIP score of one image and one text embedding as
// tt-inference-server computes it (sdxl_accuracy_utils.calculate_metrics:
// 100 * CLIPEncoder.get_clip_score): 100 × the cosine of the two vectors.
// Unlike torchmetrics' CLIPScore it is not floored at 0; a pair of
// unrelated vectors may score below 0. A zero vector scores NaN, as the
// reference's division by a zero norm does. It panics when the lengths
// differ (a programming error).
func Score(img, txt []float32) float64 {
	if len(img) != len(txt) {
		panic("vision: Score of vectors of different lengths")
	}
	var dot, ni, nt float64
	for i := range img {
		a, b := float64(img[i]), float64(txt[i])
		dot += a * b
		ni += a * a
		nt += b * b
	}
	return 100 * dot / (math.Sqrt(ni) * math.Sqrt(nt))
}

// towerConfig is the part of transformers' CLIPTextConfig or
// CLIPVisionConfig the towers need; absent fields keep transformers'
// defaults for ViT-B/32, which setDefaults fills in.
type towerConfig struct {
	HiddenSize        int     `json:"hidden_size"`
	IntermediateSize  int     `json:"intermediate_size"`
	NumAttentionHeads int     `json:"num_attention_heads"`
	NumHiddenLayers   int     `json:"num_hidden_layers"`
	HiddenAct         string  `json:"hidden_act"`
	LayerNormEps      float64 `json:"layer_norm_eps"`
	// text only
	VocabSize             int `json:"vocab_size"`
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	// vision only
	ImageSize   int `json:"image_size"`
	PatchSize   int `json:"patch_size"`
	NumChannels int `json:"num_channels"`
}

type clipConfig struct {
	ProjectionDim    int          `json:"projection_dim"`
	TextConfig       *towerConfig `json:"text_config"`
	VisionConfig     *towerConfig `json:"vision_config"`
	TextConfigDict   *towerConfig `json:"text_config_dict"`
	VisionConfigDict *towerConfig `json:"vision_config_dict"`
}

// readCLIPConfig reads config.json (bounded: the real one is 4 KiB) and
// fills transformers' defaults.
func readCLIPConfig(path string) (*clipConfig, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("CLIP config: %w", err)
	}
	if st.Size() > 1<<20 {
		return nil, fmt.Errorf("CLIP config %s: %d bytes, more than 1 MiB", path, st.Size())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CLIP config: %w", err)
	}
	var cfg clipConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("CLIP config %s: %v", path, err)
	}
	if cfg.TextConfig == nil {
		cfg.TextConfig = cfg.TextConfigDict
	}
	if cfg.VisionConfig == nil {
		cfg.VisionConfig = cfg.VisionConfigDict
	}
	if cfg.TextConfig == nil {
		cfg.TextConfig = &towerConfig{}
	}
	if cfg.VisionConfig == nil {
		cfg.VisionConfig = &towerConfig{}
	}
	if cfg.ProjectionDim == 0 {
		cfg.ProjectionDim = 512
	}
	t, v := cfg.TextConfig, cfg.VisionConfig
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&t.HiddenSize, 512)
	def(&t.IntermediateSize, 2048)
	def(&t.NumAttentionHeads, 8)
	def(&t.NumHiddenLayers, 12)
	def(&t.VocabSize, 49408)
	def(&t.MaxPositionEmbeddings, 77)
	def(&v.HiddenSize, 768)
	def(&v.IntermediateSize, 3072)
	def(&v.NumAttentionHeads, 12)
	def(&v.NumHiddenLayers, 12)
	def(&v.ImageSize, 224)
	def(&v.PatchSize, 32)
	def(&v.NumChannels, 3)
	for _, tc := range []struct {
		name string
		c    *towerConfig
	}{{"text_config", t}, {"vision_config", v}} {
		c := tc.c
		if c.HiddenAct == "" {
			c.HiddenAct = "quick_gelu"
		}
		if c.LayerNormEps == 0 {
			c.LayerNormEps = 1e-5
		}
		if c.HiddenAct != "quick_gelu" && c.HiddenAct != "gelu" {
			return nil, fmt.Errorf("CLIP config %s: %s.hidden_act %q: only quick_gelu and gelu are built", path, tc.name, c.HiddenAct)
		}
		if c.HiddenSize < 1 || c.NumAttentionHeads < 1 || c.HiddenSize%c.NumAttentionHeads != 0 {
			return nil, fmt.Errorf("CLIP config %s: %s.hidden_size %d is not a multiple of num_attention_heads %d", path, tc.name, c.HiddenSize, c.NumAttentionHeads)
		}
		if c.NumHiddenLayers < 1 || c.NumHiddenLayers > 256 || c.IntermediateSize < 1 {
			return nil, fmt.Errorf("CLIP config %s: %s has %d layers of width %d", path, tc.name, c.NumHiddenLayers, c.IntermediateSize)
		}
	}
	if v.NumChannels != 3 {
		return nil, fmt.Errorf("CLIP config %s: vision_config.num_channels %d: images are RGB", path, v.NumChannels)
	}
	if v.PatchSize < 1 || v.ImageSize < v.PatchSize || v.ImageSize%v.PatchSize != 0 || v.ImageSize > 4096 {
		return nil, fmt.Errorf("CLIP config %s: vision_config.image_size %d is not a multiple of patch_size %d", path, v.ImageSize, v.PatchSize)
	}
	if t.MaxPositionEmbeddings < clipbpe.ContextLength {
		return nil, fmt.Errorf("CLIP config %s: text_config.max_position_embeddings %d is shorter than the %d tokens of a prompt", path, t.MaxPositionEmbeddings, clipbpe.ContextLength)
	}
	return &cfg, nil
}

// tensorReader takes named float32 tensors of checked shapes from the
// weights and remembers which were taken.
type tensorReader struct {
	f    *safetensors.File
	used map[string]bool
}

func (r *tensorReader) get(name string, shape ...int) ([]float32, error) {
	r.used[name] = true
	v, err := r.f.Float32(name, shape...)
	if err != nil {
		return nil, fmt.Errorf("CLIP weights: %w", err)
	}
	return v, nil
}

func (r *tensorReader) linear(name string, out, in int, bias bool) (*nn.Linear, error) {
	w, err := r.get(name+".weight", out, in)
	if err != nil {
		return nil, err
	}
	var b []float32
	if bias {
		if b, err = r.get(name+".bias", out); err != nil {
			return nil, err
		}
	}
	return nn.NewLinear(w, out, in, b)
}

func (r *tensorReader) norm(name string, dim int) (layerNorm, error) {
	g, err := r.get(name+".weight", dim)
	if err != nil {
		return layerNorm{}, err
	}
	b, err := r.get(name+".bias", dim)
	return layerNorm{g: g, b: b}, err
}

// checkAllUsed fails on a tensor the model does not read (a checkpoint of
// another architecture would otherwise load half-used), except the named
// buffers.
func (r *tensorReader) checkAllUsed(ignore ...string) error {
	skip := map[string]bool{}
	for _, n := range ignore {
		skip[n] = true
	}
	var extra []string
	for _, n := range r.f.Names() {
		if !r.used[n] && !skip[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		if len(extra) > 5 {
			extra = append(extra[:5], fmt.Sprintf("and %d more", len(extra)-5))
		}
		return fmt.Errorf("CLIP weights %s: tensors this CLIP does not use: %v", r.f.Name, extra)
	}
	return nil
}

type layerNorm struct{ g, b []float32 }

// encoderLayer is one pre-norm transformer block (CLIPEncoderLayer, or
// open_clip's ResidualAttentionBlock).
type encoderLayer struct {
	ln1, ln2   layerNorm
	q, k, v, o *nn.Linear
	fc1, fc2   *nn.Linear
}

type encoder struct {
	// trace, when set (tests only), receives each block's output under
	// prefix+".layer.N".
	trace     func(name string, x []float32)
	prefix    string
	layers    []encoderLayer
	dim       int
	heads     int
	inter     int
	eps       float32
	quickGELU bool
}

func loadEncoder(r *tensorReader, prefix, traceName string, c *towerConfig) (*encoder, error) {
	e := &encoder{prefix: traceName, dim: c.HiddenSize, heads: c.NumAttentionHeads, inter: c.IntermediateSize,
		eps: float32(c.LayerNormEps), quickGELU: c.HiddenAct == "quick_gelu"}
	d := c.HiddenSize
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := fmt.Sprintf("%s.encoder.layers.%d.", prefix, i)
		var l encoderLayer
		var err error
		if l.ln1, err = r.norm(p+"layer_norm1", d); err != nil {
			return nil, err
		}
		if l.ln2, err = r.norm(p+"layer_norm2", d); err != nil {
			return nil, err
		}
		for _, x := range []struct {
			dst  **nn.Linear
			name string
			out  int
			in   int
		}{
			{&l.q, "self_attn.q_proj", d, d}, {&l.k, "self_attn.k_proj", d, d}, {&l.v, "self_attn.v_proj", d, d},
			{&l.o, "self_attn.out_proj", d, d}, {&l.fc1, "mlp.fc1", c.IntermediateSize, d}, {&l.fc2, "mlp.fc2", d, c.IntermediateSize},
		} {
			if *x.dst, err = r.linear(p+x.name, x.out, x.in, true); err != nil {
				return nil, err
			}
		}
		e.layers = append(e.layers, l)
	}
	return e, nil
}

// forward runs the blocks over x (the sequences of lens, one after
// another, dim values a token) in place.
func (e *encoder) forward(p *kernels.Pool, x []float32, lens []int, causal bool) {
	rows := 0
	for _, n := range lens {
		rows += n
	}
	d := e.dim
	h := make([]float32, rows*d)
	q := make([]float32, rows*d)
	k := make([]float32, rows*d)
	v := make([]float32, rows*d)
	a := make([]float32, rows*d)
	m := make([]float32, rows*e.inter)
	for li, l := range e.layers {
		e.norm(p, h, x, rows, l.ln1)
		l.q.Forward(p, q, h, rows)
		l.k.Forward(p, k, h, rows)
		l.v.Forward(p, v, h, rows)
		nn.Attention(p, a, q, k, v, lens, e.heads, d/e.heads, causal)
		l.o.Forward(p, h, a, rows)
		kernels.Add(x[:rows*d], h)
		e.norm(p, h, x, rows, l.ln2)
		l.fc1.Forward(p, m, h, rows)
		p.Run(rows, func(lo, hi int) {
			if e.quickGELU {
				nn.QuickGELU(m[lo*e.inter : hi*e.inter])
			} else {
				nn.GELU(m[lo*e.inter : hi*e.inter])
			}
		})
		l.fc2.Forward(p, h, m, rows)
		kernels.Add(x[:rows*d], h)
		if e.trace != nil {
			e.trace(fmt.Sprintf("%s.layer.%d", e.prefix, li), x[:rows*d])
		}
	}
}

// norm is LayerNorm over rows rows of x into dst, split over the pool.
func (e *encoder) norm(p *kernels.Pool, dst, x []float32, rows int, ln layerNorm) {
	d := e.dim
	p.Run(rows, func(lo, hi int) {
		nn.LayerNorm(dst[lo*d:hi*d], x[lo*d:hi*d], hi-lo, d, ln.g, ln.b, e.eps)
	})
}

// vitTower is CLIP's vision transformer with its projection.
type vitTower struct {
	enc       *encoder
	patch     *nn.Linear // the patch convolution as a dense layer over flattened patches
	cls       []float32
	pos       []float32
	pre, post layerNorm
	proj      *nn.Linear
	image     int
	patchSize int
}

func loadViT(r *tensorReader, cfg *clipConfig) (*vitTower, error) {
	c := cfg.VisionConfig
	d, ps := c.HiddenSize, c.PatchSize
	grid := c.ImageSize / ps
	t := &vitTower{image: c.ImageSize, patchSize: ps}
	var err error
	pw, err := r.get("vision_model.embeddings.patch_embedding.weight", d, 3, ps, ps)
	if err != nil {
		return nil, err
	}
	if t.patch, err = nn.NewLinear(pw, d, 3*ps*ps, nil); err != nil {
		return nil, err
	}
	if t.cls, err = r.get("vision_model.embeddings.class_embedding", d); err != nil {
		return nil, err
	}
	if t.pos, err = r.get("vision_model.embeddings.position_embedding.weight", grid*grid+1, d); err != nil {
		return nil, err
	}
	if t.pre, err = r.norm("vision_model.pre_layrnorm", d); err != nil { // sic: transformers' name
		return nil, err
	}
	if t.post, err = r.norm("vision_model.post_layernorm", d); err != nil {
		return nil, err
	}
	if t.enc, err = loadEncoder(r, "vision_model", "vision", c); err != nil {
		return nil, err
	}
	if t.proj, err = r.linear("visual_projection", cfg.ProjectionDim, d, false); err != nil {
		return nil, err
	}
	return t, nil
}

// preprocess is open_clip's "openai" eval transform: resize the shorter
// side to the image size with PIL's bicubic filter, centre crop, ToTensor,
// Normalize (CHW float32).
func (t *vitTower) preprocess(img *imgproc.RGB) []float32 {
	w, h := imgproc.ShortSide(img.W, img.H, t.image)
	img = imgproc.ResizeBicubic(img, w, h)
	img = imgproc.CenterCrop(img, t.image, t.image)
	return imgproc.Normalize(img, clipMean, clipStd)
}

// forward embeds a batch of preprocessed images.
func (t *vitTower) forward(p *kernels.Pool, pixels [][]float32) [][]float32 {
	ps, d, grid := t.patchSize, t.enc.dim, t.image/t.patchSize
	np := grid * grid
	b := len(pixels)
	cols := 3 * ps * ps
	// Flatten each patch in the convolution weight's (channel, y, x) order.
	patches := make([]float32, b*np*cols)
	for i, px := range pixels {
		for gy := 0; gy < grid; gy++ {
			for gx := 0; gx < grid; gx++ {
				dst := patches[((i*np)+gy*grid+gx)*cols:]
				for c := 0; c < 3; c++ {
					for y := 0; y < ps; y++ {
						src := px[c*t.image*t.image+(gy*ps+y)*t.image+gx*ps:]
						copy(dst[(c*ps+y)*ps:(c*ps+y+1)*ps], src[:ps])
					}
				}
			}
		}
	}
	emb := make([]float32, b*np*d)
	t.patch.Forward(p, emb, patches, b*np)
	seq := np + 1
	x := make([]float32, b*seq*d)
	lens := make([]int, b)
	for i := 0; i < b; i++ {
		lens[i] = seq
		copy(x[i*seq*d:], t.cls)
		copy(x[(i*seq+1)*d:], emb[i*np*d:(i+1)*np*d])
		for s := 0; s < seq; s++ {
			kernels.Add(x[(i*seq+s)*d:(i*seq+s+1)*d], t.pos[s*d:(s+1)*d])
		}
	}
	nn.LayerNorm(x, x, b*seq, d, t.pre.g, t.pre.b, t.enc.eps)
	if t.enc.trace != nil {
		t.enc.trace("vision.ln_pre", x)
	}
	t.enc.forward(p, x, lens, false)
	pooled := make([]float32, b*d)
	for i := 0; i < b; i++ {
		nn.LayerNorm(pooled[i*d:(i+1)*d], x[i*seq*d:(i*seq+1)*d], 1, d, t.post.g, t.post.b, t.enc.eps)
	}
	out := make([]float32, b*t.proj.Out)
	t.proj.Forward(p, out, pooled, b)
	res := make([][]float32, b)
	for i := range res {
		res[i] = out[i*t.proj.Out : (i+1)*t.proj.Out : (i+1)*t.proj.Out]
	}
	return res
}

// textTower is CLIP's causal text transformer with its projection.
type textTower struct {
	enc   *encoder
	embed []float32
	vocab int
	pos   []float32
	final layerNorm
	proj  *nn.Linear
}

func loadTextTower(r *tensorReader, cfg *clipConfig) (*textTower, error) {
	c := cfg.TextConfig
	d := c.HiddenSize
	t := &textTower{vocab: c.VocabSize}
	var err error
	if t.embed, err = r.get("text_model.embeddings.token_embedding.weight", c.VocabSize, d); err != nil {
		return nil, err
	}
	if t.pos, err = r.get("text_model.embeddings.position_embedding.weight", c.MaxPositionEmbeddings, d); err != nil {
		return nil, err
	}
	if t.final, err = r.norm("text_model.final_layer_norm", d); err != nil {
		return nil, err
	}
	if t.enc, err = loadEncoder(r, "text_model", "text", c); err != nil {
		return nil, err
	}
	if t.proj, err = r.linear("text_projection", cfg.ProjectionDim, d, false); err != nil {
		return nil, err
	}
	return t, nil
}

// forward embeds one tokenized text. open_clip pools at text.argmax(-1),
// the first position of the largest id (the end token); under the causal
// mask the positions after it do not change it, so only the tokens up to
// it are run.
func (t *textTower) forward(p *kernels.Pool, ids []int) []float32 {
	at := 0
	for i, id := range ids {
		if id > ids[at] {
			at = i
		}
	}
	n, d := at+1, t.enc.dim
	x := make([]float32, n*d)
	for i := 0; i < n; i++ {
		id := ids[i] // below t.vocab: OpenCLIP checked the tokenizer's size
		copy(x[i*d:(i+1)*d], t.embed[id*d:(id+1)*d])
		kernels.Add(x[i*d:(i+1)*d], t.pos[i*d:(i+1)*d])
	}
	t.enc.forward(p, x, []int{n}, true)
	last := make([]float32, d)
	nn.LayerNorm(last, x[at*d:(at+1)*d], 1, d, t.final.g, t.final.b, t.enc.eps)
	out := make([]float32, t.proj.Out)
	t.proj.Forward(p, out, last, 1)
	return out
}
