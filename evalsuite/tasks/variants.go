package tasks

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"image"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Variant is how one catalog task name runs for some models: the catalog
// references load_image for text-to-image models, image-to-image and
// inpainting models, classifiers and a detector, which tt-inference-server
// grades in as many ways (it dispatches on the media server's runner).
type Variant struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Models are the catalog model names the variant serves.
	Models []string `json:"models"`
	// Data are Hugging Face splits pulled as for any task; Assets are
	// files the reference reads from outside the Hub, which the operator
	// places in the folder given as the task's dataset.
	Data   []HubData `json:"data,omitempty"`
	Assets []Asset   `json:"assets,omitempty"`
	// Weights names the network weights the scores need and where they
	// come from.
	Weights []string `json:"weights,omitempty"`
	// NotMeasured says what of the reference's measurements the variant
	// does not reproduce, and why (it is reported beside the scores).
	NotMeasured string `json:"not_measured,omitempty"`
}

// Asset is a file the reference downloads from outside the Hub. It is
// identified by its SHA-256, or, where only the git object is known (a
// file too large for the mirror it was read from), by its git blob hash
// (`git hash-object FILE`).
type Asset struct {
	Role    string `json:"role"`
	File    string `json:"file"`
	SHA256  string `json:"sha256,omitempty"`
	GitBlob string `json:"git_blob,omitempty"`
	Size    int64  `json:"size,omitempty"`
	URL     string `json:"url"`
	What    string `json:"what"`
}

// id is the asset's digest as results name it.
func (a Asset) id() string {
	if a.SHA256 != "" {
		return "sha256 " + a.SHA256
	}
	return "git blob " + a.GitBlob
}

// describe names the asset for an error message: file, digest and where
// it is published.
func (a Asset) describe() string {
	id := "sha256 " + a.SHA256
	if a.SHA256 == "" {
		id = "git blob " + a.GitBlob + " (check with `git hash-object " + a.File + "`)"
	}
	return fmt.Sprintf("%s (%s, %s; %s)", a.File, a.What, id, a.URL)
}

// maxAssetBytes bounds an asset file (the Inception weights are 92 MB).
const maxAssetBytes = 1 << 30

// Locate finds the asset in dir and checks its digest. Every problem is
// an error that names the exact file, its digest and where it is
// published.
func (a Asset) Locate(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("needs %s: put it in a folder and pass that folder as the task's dataset", a.describe())
	}
	p := filepath.Join(dir, a.File)
	sum, err := digest(p, a.GitBlob != "" && a.SHA256 == "")
	if err != nil {
		return "", fmt.Errorf("needs %s in %s: %w", a.describe(), dir, err)
	}
	want := a.SHA256
	if want == "" {
		want = a.GitBlob
	}
	if sum != want {
		return "", fmt.Errorf("%s is not the published file: its digest is %s, want %s", p, sum, a.describe())
	}
	return p, nil
}

// digest hashes a regular file without blocking on it (a named pipe, a
// device): stat first, open non-blocking, check the descriptor again.
// gitBlob hashes it as git's blob object instead of plain SHA-256.
func digest(p string, gitBlob bool) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errors.New("the file is not there")
		}
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%v)", p, st.Mode().Type())
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() || st.Size() > maxAssetBytes {
		return "", fmt.Errorf("%s is not a regular file of at most %d bytes", p, maxAssetBytes)
	}
	var h hash.Hash = sha256.New()
	if gitBlob {
		h = sha1.New()
		fmt.Fprintf(h, "blob %d\x00", st.Size())
	}
	n, err := io.Copy(h, io.LimitReader(f, st.Size()+1))
	if err != nil {
		return "", err
	}
	if n != st.Size() {
		return "", fmt.Errorf("%s changed while it was read", p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readAsset locates an asset and reads it whole.
func readAsset(a Asset, dir string) ([]byte, string, error) {
	p, err := a.Locate(dir)
	if err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(p)
	return b, p, err
}

// VariantOf returns the variant of task that serves model (a catalog
// model name or Hugging Face repository); ok is false when the task has
// no variants. A task with variants that serve no such model is an error
// that lists the models it serves.
func VariantOf(task, model string) (*Variant, bool, error) {
	info, known := InfoOf(task)
	if !known || len(info.Variants) == 0 {
		return nil, false, nil
	}
	base := path.Base(strings.TrimSpace(model))
	if base == "." || base == "" {
		return nil, true, fmt.Errorf("task %s runs differently per model (%s): it needs the catalog model (a unit, or --catalog-model)", task, variantNames(info.Variants))
	}
	for i, v := range info.Variants {
		if slices.ContainsFunc(v.Models, func(m string) bool { return strings.EqualFold(m, base) }) {
			return &info.Variants[i], true, nil
		}
	}
	var all []string
	for _, v := range info.Variants {
		all = append(all, v.Models...)
	}
	return nil, true, fmt.Errorf("task %s is defined for %s, not %s", task, strings.Join(all, ", "), base)
}

func variantNames(vs []Variant) string {
	var n []string
	for _, v := range vs {
		n = append(n, v.Name)
	}
	return strings.Join(n, ", ")
}

// AssetsHint says what files a variant needs from outside the Hub and
// where they go, or, for a variant with Hub data, where that comes from.
func AssetsHint(task string, v *Variant) string {
	if len(v.Assets) == 0 {
		return "it reads " + describeData(v.Data)
	}
	var files []string
	for _, a := range v.Assets {
		files = append(files, a.describe())
	}
	return fmt.Sprintf("it needs files published outside the Hub: %s; put them in one folder and pass --dataset %s=FOLDER (a unit: [evals] datasets)", strings.Join(files, "; "), task)
}

// ImageTextEncoder is the CLIP model tt-inference-server scores images
// with: image and text embeddings whose cosine, ×100, is the CLIP score.
type ImageTextEncoder interface {
	EncodeImages(ctx context.Context, imgs []image.Image) ([][]float32, error)
	EncodeTexts(ctx context.Context, texts []string) ([][]float32, error)
}

// FeatureExtractor is FID's Inception network: a 2048-d feature per image.
type FeatureExtractor interface {
	Features(ctx context.Context, imgs []image.Image) ([][]float32, error)
}

// Vision opens the networks the image and video tasks measure with, once
// per run. CLIP comes with what identifies its weights (repository@commit),
// which results report as a condition; Inception opens the weights file a
// task located and checked (its digest is the condition).
type Vision interface {
	CLIP() (ImageTextEncoder, string, error)
	Inception(path string) (FeatureExtractor, error)
}

// DefaultLimit is the number of documents a task with variants evaluates
// when no limit is asked for: the reference's own count, whatever the run
// size (its media evals ignore the limit modes). "" means all the task
// builds (the reference's fixed sets: 1 image, 20 or 100 images, 5 videos).
func DefaultLimit(task, model string) (string, bool) {
	v, has, err := VariantOf(task, model)
	if !has {
		return "", false
	}
	if err == nil && v.Name == "text-to-image" {
		return strconv.Itoa(imagePromptsBy), true
	}
	return "", true
}

// WhyNotMeasurable says why ttis cannot measure task for a catalog model
// ("" when it can, given its data): the task is unknown, listed as not
// runnable, or runs differently per model and has no variant for this
// one. The catalog's completeness rule (ttisctl catalog) asks this of
// every reference.
func WhyNotMeasurable(task, model string) string {
	info, ok := InfoOf(task)
	switch {
	case !ok:
		return "ttis does not implement this task"
	case info.NotRunnable != "":
		return info.NotRunnable
	}
	if _, _, err := VariantOf(task, model); err != nil {
		return err.Error()
	}
	return ""
}
