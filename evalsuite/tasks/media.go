package tasks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/metric"
	"github.com/ttis-dev/ttis/runtime/media"
)

// The media tasks the catalog references for media models, as
// tt-inference-server's media eval step runs them: speech recognition
// through lmms-eval's librispeech task and its whisper_tt model,
// embeddings through MTEB's STS12, text to speech, images and video.

func init() {
	register(Info{Name: "librispeech_test_other", Output: evalsuite.Media,
		Description: "LibriSpeech test-other (lmms-lab/librispeech): each clip posted to /v1/audio/transcriptions as whisper_tt does, corpus WER in percent after Whisper's text normalisation (fields audio, gt, source, task); WER-unit references grade 100 − WER",
		Follows:     "lmms-eval lmms_eval/tasks/librispeech/librispeech_test_other.yaml and utils.py (compute_wer, librispeech_wer); tt-inference-server's lmms-eval fork lmms_eval/models/whisper_tt.py",
		// lmms-eval loads the default configuration (no dataset_name),
		// whose split librispeech_test_other is data/'s Parquet file
		// (FLAC clips); the per-split folders on main are other
		// configurations.
		Data: []HubData{{Role: RoleTest, Repo: "lmms-lab/librispeech", Split: "librispeech_test_other", Files: "data/librispeech_test_other-*.parquet"}}}, buildLibriSpeech)
	register(Info{Name: "embedding", Output: evalsuite.Media,
		Description: "MTEB STS12 (mteb/sts12-sts test): both sentences of a pair embedded through /v1/embeddings, Spearman correlation of their cosine similarity with the gold score (cosine_spearman, MTEB's main score) (fields sentence1, sentence2, score)",
		Follows:     "MTEB STS evaluator, task STS12 (main_score cosine_spearman), as tt-inference-server's test_module/eval_tests/_mteb_eval_runner.py runs it (one sentence per request); tt-inference-server grades it NA (no reference score)",
		Data:        []HubData{parquetSplit(RoleTest, "mteb/sts12-sts", "", "test")}}, buildSTS12)
	register(Info{Name: "tts_generation", Output: evalsuite.Media, NeedsASR: true,
		Description: "text to speech judged by intelligibility: the first 10 LibriTTS-R test.clean texts (blabble-io/libritts_r, field text_original) said through /v1/audio/speech, re-transcribed by a speech-recognition server (--asr-url), intelligibility = (1 − mean WER)×100; passes at mean WER ≤ 20%",
		Follows:     "tt-inference-server test_module/eval_tests/tts_eval_tests.py and tts_quality_test.py (TTSQualityTest: sample_count 10, wer_threshold 0.20)",
		Data:        []HubData{{Role: RoleTest, Repo: "blabble-io/libritts_r", Config: "clean", Split: "test.clean", Revision: RevisionParquet, Files: "clean/test.clean/0000.parquet"}}}, buildTTS)
	register(Info{Name: "load_image", Output: evalsuite.Media,
		Description: "image models as tt-inference-server grades them, by model: text-to-image by FID and CLIP score within the reference's ranges, image-to-image and inpainting by the CLIP score of one image (reported), classifiers by ImageNet top-1, YOLOX-nano by COCO mAP (see variants)",
		Follows:     "tt-inference-server test_module/eval_tests/image_eval_tests.py, image_generation_eval_test.py, cnn_eval_tests.py, vision_evals_test.py and utils/sdxl_accuracy_utils (11ac526e0)",
		Variants:    imageVariants}, buildLoadImage)
	register(Info{Name: "load_video", Output: evalsuite.Media,
		Description: "video models as tt-inference-server grades them: the CLIP score of every 8th frame of a video per prompt, within the reference's range (see variants; FVD and FVMD are not measured)",
		Follows:     "tt-inference-server test_module/eval_tests/video_eval_tests.py and video_generation_eval_test.py (11ac526e0)",
		Variants:    videoVariants}, buildLoadVideo)
}

// AudioBytes reads a dataset's audio value: Hugging Face's Audio feature
// ({"bytes": ..., "path": ...}: the bytes raw as Parquet gives them, or
// base64 text in JSON Lines), or raw bytes. WAV and MP3 clips, the formats
// a transcription server sniffs, are sent as they are; FLAC clips
// (LibriSpeech's own encoding) are decoded into a WAV first, as whisper_tt
// decodes every clip before posting it. Anything else is an error naming
// what it is.
func AudioBytes(v any) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case map[string]any:
		b, _ := x["bytes"].(string)
		if b == "" {
			return nil, errors.New("audio has no bytes (a path-only clip is not supported: the Hub's Parquet files carry the bytes)")
		}
		raw = []byte(b)
	case string:
		raw = []byte(x)
	default:
		return nil, fmt.Errorf("audio is a %T, want the Audio feature's {bytes, path}", v)
	}
	if !isFLAC(raw) {
		if _, err := media.ProbeAudio(raw); err != nil {
			dec, derr := base64.StdEncoding.DecodeString(string(raw))
			if derr != nil {
				return nil, fmt.Errorf("audio: %w", err)
			}
			raw = dec
		}
	}
	if isFLAC(raw) {
		return flacToWAV(raw)
	}
	if _, err := media.ProbeAudio(raw); err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	return raw, nil
}

func isFLAC(b []byte) bool { return len(b) >= 4 && string(b[:4]) == "fLaC" }

// whisperEOT is whisper_tt's default stop sequence: the tokenizer's
// end-of-text token, at which it cuts every transcript.
const whisperEOT = "<|endoftext|>"

// libriLanguage is the language compute_wer normalises for: the doc's
// task field ("asr_en") after its first four characters.
func libriLanguage(d evalsuite.Doc) string {
	task, err := d.Str("task")
	if err != nil || len(task) <= 4 {
		return "en"
	}
	return task[4:]
}

func buildLibriSpeech(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	const prompt = "Please recognize the speech and only output the recognized content:"
	ref := func(d evalsuite.Doc) (string, error) { return d.Str("gt") }
	return &evalsuite.Task{
		Name: "librispeech_test_other", Version: "0.0", Output: evalsuite.Media, Docs: docs,
		DocToTarget: ref,
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			audio, err := AudioBytes(d.Fields["audio"])
			if err != nil {
				return nil, fmt.Errorf("%s: field \"audio\": %w", d.Source, err)
			}
			sum := sha256.Sum256(audio)
			return []evalsuite.Instance{{Kind: evalsuite.KindTranscribe, Context: prompt, Audio: audio, AudioSHA256: hex.EncodeToString(sum[:])}}, nil
		},
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			gt, err := ref(d)
			if err != nil {
				return nil, err
			}
			if len(resps) != 1 {
				return nil, fmt.Errorf("%s: %d answers for one clip", d.Source, len(resps))
			}
			pred, _, _ := strings.Cut(resps[0].Text, whisperEOT)
			return evalsuite.Scores{"wer": metric.DocWER(gt, pred, libriLanguage(d))}, nil
		},
		// A clip that could not be transcribed counts as whisper_tt's
		// empty answer: every reference word deleted.
		ErroredScores: func(d evalsuite.Doc) (evalsuite.Scores, error) {
			gt, err := ref(d)
			if err != nil {
				return nil, err
			}
			return evalsuite.Scores{"wer": metric.DocWER(gt, "", libriLanguage(d))}, nil
		},
		Metrics: []evalsuite.MetricSpec{{Name: "wer", Aggregation: "librispeech_wer", HigherIsBetter: false, Corpus: metric.CorpusWER}},
		Config: map[string]any{
			"task": "librispeech_test_other", "dataset_path": "lmms-lab/librispeech", "test_split": "librispeech_test_other",
			"output_type": "generate_until", "doc_to_target": "gt",
			"model":             "whisper_tt (POST /v1/audio/transcriptions, JSON {\"file\": base64 clip, \"stream\": false})",
			"generation_kwargs": map[string]any{"max_new_tokens": 256, "temperature": 0, "top_p": 1.0, "num_beams": 1, "do_sample": false},
			"metric_list":       []map[string]any{{"metric": "wer", "aggregation": "librispeech_wer (percent)", "higher_is_better": false}},
			"normalizer":        "Whisper EnglishTextNormalizer without number and British-spelling standardisation, then BasicTextNormalizer",
		},
	}, nil
}

func buildSTS12(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	gold := func(d evalsuite.Doc) (float64, error) {
		switch v := d.Fields["score"].(type) {
		case float64:
			return v, nil
		case float32:
			return float64(v), nil
		case int64:
			return float64(v), nil
		case int:
			return float64(v), nil
		}
		return 0, fmt.Errorf("%s: field \"score\" is %v, want a number", d.Source, d.Fields["score"])
	}
	return &evalsuite.Task{
		Name: "embedding", Version: "STS12", Output: evalsuite.Media, Docs: docs,
		DocToTarget: func(d evalsuite.Doc) (string, error) {
			g, err := gold(d)
			return fmt.Sprint(g), err
		},
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			s1, err := d.Str("sentence1")
			if err != nil {
				return nil, err
			}
			s2, err := d.Str("sentence2")
			if err != nil {
				return nil, err
			}
			// One sentence per request, as tt-inference-server's
			// SingleStringOpenAIModel embeds them.
			return []evalsuite.Instance{{Kind: evalsuite.KindEmbed, Index: 0, Inputs: []string{s1}}, {Kind: evalsuite.KindEmbed, Index: 1, Inputs: []string{s2}}}, nil
		},
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			g, err := gold(d)
			if err != nil {
				return nil, err
			}
			if len(resps) != 2 || len(resps[0].Embeddings) != 1 || len(resps[1].Embeddings) != 1 {
				return nil, fmt.Errorf("%s: want one embedding of each sentence", d.Source)
			}
			a, b := resps[0].Embeddings[0], resps[1].Embeddings[0]
			c := metric.Cosine(a, b)
			if math.IsNaN(c) {
				return nil, fmt.Errorf("%s: embeddings of lengths %d and %d (or all zeros) have no cosine similarity", d.Source, len(a), len(b))
			}
			return evalsuite.Scores{"cosine_spearman": {c, g}}, nil
		},
		// A pair that could not be embedded counts as unrelated
		// sentences (cosine 0), so a failing server cannot gain rank
		// correlation by dropping pairs.
		ErroredScores: func(d evalsuite.Doc) (evalsuite.Scores, error) {
			g, err := gold(d)
			if err != nil {
				return nil, err
			}
			return evalsuite.Scores{"cosine_spearman": {0, g}}, nil
		},
		Metrics: []evalsuite.MetricSpec{{Name: "cosine_spearman", Aggregation: "spearman", HigherIsBetter: true, Corpus: metric.CorpusSpearman}},
		Config: map[string]any{
			"task": "STS12", "dataset_path": "mteb/sts12-sts", "test_split": "test", "main_score": "cosine_spearman",
			"model": "OpenAI embeddings (POST /v1/embeddings, one sentence per request, encoding_format float), cosine similarity of each pair; tt-inference-server also sends dimensions=1000, which ttis does not (a model without Matryoshka dimensions would refuse it)",
		},
	}, nil
}

// ttsSamples is TTSQualityTest's default sample_count: the first ten
// texts of the split, in the dataset's order (it streams and takes them).
const ttsSamples = 10

var ttsNonWord = regexp.MustCompile(`[^\w\s']`)

// ttsWords is TTSQualityTest's _normalize_text: lower case, every
// character that is not a word character, space or apostrophe becomes a
// space. (Python's \w also matches non-ASCII letters; Go's does not, which
// only matters for accented words.)
func ttsWords(s string) []string {
	return strings.Fields(ttsNonWord.ReplaceAllString(strings.ToLower(s), " "))
}

// ttsWER is TTSQualityTest's _calculate_wer: word edit distance over the
// reference length, capped at 1; an empty reference scores 0 against an
// empty transcript and 1 otherwise.
func ttsWER(ref, hyp string) float64 {
	r, h := ttsWords(ref), ttsWords(hyp)
	if len(r) == 0 {
		if len(h) == 0 {
			return 0
		}
		return 1
	}
	return min(float64(metric.WordEdits(r, h))/float64(len(r)), 1)
}

func buildTTS(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	if len(docs) > ttsSamples {
		docs = docs[:ttsSamples]
	}
	text := func(d evalsuite.Doc) (string, error) { return d.Str("text_original") }
	score := func(wer float64) evalsuite.Scores {
		return evalsuite.Scores{"intelligibility": {1 - wer}, "wer": {wer}}
	}
	return &evalsuite.Task{
		Name: "tts_generation", Version: "1.0", Output: evalsuite.Media, Docs: docs,
		DocToTarget: text,
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			t, err := text(d)
			if err != nil {
				return nil, err
			}
			return []evalsuite.Instance{{Kind: evalsuite.KindSpeechASR, Context: t}}, nil
		},
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			t, err := text(d)
			if err != nil {
				return nil, err
			}
			if len(resps) != 1 {
				return nil, fmt.Errorf("%s: %d answers for one text", d.Source, len(resps))
			}
			return score(ttsWER(t, resps[0].Text)), nil
		},
		// TTSQualityTest leaves a failed sample out of its mean (and
		// reports valid/total); ttis counts it as unintelligible, so that
		// failures cannot raise the score.
		ErroredScores: func(evalsuite.Doc) (evalsuite.Scores, error) { return score(1), nil },
		Metrics: []evalsuite.MetricSpec{
			{Name: "intelligibility", Aggregation: "mean", HigherIsBetter: true},
			{Name: "wer", Aggregation: "mean", HigherIsBetter: false},
		},
		Config: map[string]any{
			"task": "tts_generation", "dataset_path": "blabble-io/libritts_r", "dataset_name": "clean", "test_split": "test.clean",
			"sample_count": ttsSamples, "wer_threshold": 0.20,
			"model": "POST /v1/audio/speech {\"text\", \"response_format\": \"verbose_json\"}, the WAV re-transcribed through the ASR server's /v1/audio/transcriptions (tt-inference-server uses openai/whisper-base in process)",
		},
	}, nil
}
