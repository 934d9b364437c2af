package runtime

import (
	"context"
	"errors"
	"time"
)

// The media capability: what the server (runtime/serve) asks of a backend
// that serves a non-LLM model, after tt-media-server's services (image,
// audio, text_to_speech, cnn, embedding, video).
//
// The server owns HTTP, auth, admission (one slot per request; the same
// max_concurrency slots and bounded wait queue as text units), request
// validation and decoding (audio is sniffed and measured, images are
// checked, before a backend sees them), response encoding and metrics. A
// media backend (a Backend that is a MediaModel) owns the model: it runs
// the request on its workers and returns the result. It implements the
// capability interface of its task (ImageGenerator, Transcriber,
// SpeechSynthesizer, ImageClassifier, Embedder, VideoGenerator); a text
// Engine may implement Embedder too (the cpu runtime's /v1/embeddings).
//
// Adding a task: a MediaTask constant, its request and result types and
// its capability interface here; its routes in runtime/serve/media.go
// (mediaRoutes) and a handler beside the others.

// MediaTask is what a media model does: tt-media-server's MODEL_SERVICE.
type MediaTask string

// Media tasks.
const (
	TaskImage     MediaTask = "image"
	TaskAudio     MediaTask = "audio"
	TaskSpeech    MediaTask = "text_to_speech"
	TaskCNN       MediaTask = "cnn"
	TaskEmbedding MediaTask = "embedding"
	TaskVideo     MediaTask = "video"
)

// MediaModel is the media capability: a backend that serves a media
// model says which task and workers. Implementations must be safe for
// concurrent use; the server calls them from many goroutines and the
// backend queues requests on its workers.
type MediaModel interface {
	// Media describes the task and the layout of the backend's workers.
	Media() MediaInfo
}

// MediaEngine is a media backend in this process (the sim runtime's).
// Its Info's MaxContext is 0 unless the model takes text with a limit.
type MediaEngine interface {
	Backend
	MediaModel
}

// MediaInfo describes a media engine.
type MediaInfo struct {
	Task MediaTask
	// Runner is tt-media-server's MODEL_RUNNER name ("tt-sdxl-trace").
	Runner string
	// Device is the device type ("n300"); Mesh the device mesh of one
	// worker (rows, columns).
	Device string
	Mesh   [2]int
	// Workers are the chip groups of the worker processes, as
	// tt-media-server's DEVICE_IDS gives them: [[0,1],[2,3]].
	Workers [][]int
	// ImageSizes are the sizes an image model generates ("1024x1024"),
	// the default first.
	ImageSizes []string
	// MaxImages is the most images one request may ask for.
	MaxImages int
	// ImageInput says what an image model takes besides the prompt, as
	// its tt-media-server runner does: ImageFromText (/generations),
	// ImageFromImage (/image-to-image: an image) or ImageEdit (/edits:
	// an image and a mask).
	ImageInput ImageInput
	// MinSteps and MaxSteps bound num_inference_steps; DefaultSteps is
	// used when a request gives none.
	MinSteps, MaxSteps, DefaultSteps int
	// Dimensions is an embedding model's vector length; Matryoshka is true
	// when it may be shortened (the request's "dimensions").
	Dimensions int
	Matryoshka bool
}

// ImageInput is what an image model takes besides its prompt.
type ImageInput string

// Image inputs.
const (
	ImageFromText  ImageInput = ""
	ImageFromImage ImageInput = "image"
	ImageEdit      ImageInput = "image+mask"
)

// ImageRequest asks for images from a text prompt (and, for
// image-to-image and edit models, an image and a mask).
type ImageRequest struct {
	ID             string
	Prompt         string
	NegativePrompt string
	// Steps is num_inference_steps; GuidanceScale the classifier-free
	// guidance weight.
	Steps         int
	GuidanceScale float64
	// Seed makes the images reproducible when HasSeed is set.
	Seed    int64
	HasSeed bool
	// Count is number_of_images (n); Width and Height one of the engine's
	// ImageSizes.
	Count         int
	Width, Height int
	// Image is the (checked) input image, Mask the edit mask (white is
	// repainted); Strength (0-1) how far the output departs from Image.
	Image, Mask []byte
	Strength    float64
}

// ImageGenerator generates images. Each returned image is a PNG file of
// the requested size.
type ImageGenerator interface {
	GenerateImages(ctx context.Context, req *ImageRequest) ([][]byte, error)
}

// Audio is an uploaded clip the server has sniffed and measured.
type Audio struct {
	// Format is "wav" or "mp3" (from the bytes, never from a file name).
	Format     string
	Duration   time.Duration
	SampleRate int
	Channels   int
	Data       []byte
}

// TranscribeRequest asks for the text spoken in a clip.
type TranscribeRequest struct {
	ID       string
	Audio    Audio
	Prompt   string
	Language string
	// Diarize asks for speaker labels (perform_diarization).
	Diarize bool
}

// Segment is one timed piece of a transcript. Start and End are seconds
// from the start of the clip.
type Segment struct {
	ID      int
	Speaker string
	Start   float64
	End     float64
	Text    string
}

// Transcript is a finished transcription.
type Transcript struct {
	Text     string
	Duration float64
	Language string
	Segments []Segment
	Speakers []string
}

// Transcriber turns speech into text. It calls emit for each segment as
// soon as it is ready (the server streams them with stream=true); an error
// from emit ends the transcription with that error.
type Transcriber interface {
	Transcribe(ctx context.Context, req *TranscribeRequest, emit func(Segment) error) (*Transcript, error)
}

// SpeechRequest asks for text to be spoken.
type SpeechRequest struct {
	ID        string
	Text      string
	SpeakerID string
}

// Speech is synthesized audio: a WAV file.
type Speech struct {
	WAV        []byte
	Duration   time.Duration
	SampleRate int
}

// SpeechSynthesizer speaks text.
type SpeechSynthesizer interface {
	Speak(ctx context.Context, req *SpeechRequest) (*Speech, error)
}

// ClassifyRequest asks what a (decoded, checked) image shows.
type ClassifyRequest struct {
	ID    string
	Image []byte
	// Width and Height are the image's size.
	Width, Height int
	TopK          int
	// MinConfidence (0-100) drops predictions below it.
	MinConfidence float64
}

// Prediction is one class with its confidence in percent.
type Prediction struct {
	Label      string
	Confidence float64
}

// ImageClassifier classifies images (tt-media-server's CNN service).
type ImageClassifier interface {
	Classify(ctx context.Context, req *ClassifyRequest) ([]Prediction, error)
}

// EmbedRequest asks for one vector per input text.
type EmbedRequest struct {
	ID     string
	Inputs []string
	// Dimensions shortens the vectors (Matryoshka models); 0 keeps the
	// model's length.
	Dimensions int
}

// Embeddings are the vectors of an EmbedRequest, in input order, each of
// unit length.
type Embeddings struct {
	Vectors      [][]float32
	PromptTokens int
}

// Embedder computes text embeddings.
type Embedder interface {
	// EmbeddingInfo gives the vector length and whether it may be
	// shortened.
	EmbeddingInfo() (dimensions int, matryoshka bool)
	Embed(ctx context.Context, req *EmbedRequest) (*Embeddings, error)
}

// ErrInputTooLong is returned (wrapped) by an Embedder when an input does
// not fit the model's context; the server answers 400.
var ErrInputTooLong = errors.New("input exceeds the model's context window")

// VideoRequest asks for a video from a text prompt.
type VideoRequest struct {
	ID             string
	Prompt         string
	NegativePrompt string
	Steps          int
	Seed           int64
	HasSeed        bool
	// DurationSeconds is the video's length.
	DurationSeconds int
}

// Video is a generated video: an MP4 file.
type Video struct {
	MP4           []byte
	Width, Height int
	FPS, Frames   int
}

// VideoGenerator generates videos. The server runs them as jobs
// (tt-media-server's asynchronous video API).
type VideoGenerator interface {
	GenerateVideo(ctx context.Context, req *VideoRequest) (*Video, error)
}
