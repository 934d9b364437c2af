package tasks

import (
	"os"

	"github.com/ttis-dev/ttis/evalsuite/ifeval"
)

// Coverage says how far a task reproduces the reference it follows, so
// that an operator sees before a release what a run can prove
// (ttisctl eval --list-tasks) and the catalog can count the specs whose
// evals are certifiable.
type Coverage struct {
	// Reproduces is one of the Reproduces* values.
	Reproduces string `json:"reproduces"`
	// Assets are the user-supplied files a full reproduction needs (given
	// as --dataset TASK=DIR, DIR holding each one's Folder).
	Assets []AssetFolder `json:"assets,omitempty"`
	// Differs says what differs from the reference, or what residual
	// difference a full reproduction keeps.
	Differs string `json:"differs,omitempty"`
	// Checked says how the scoring was checked: against the reference
	// harness's own code run on varied inputs (CheckedReferenceCode), only
	// against a re-derivation of it (CheckedRederived), or not at all.
	Checked string `json:"checked"`
	// Evidence names the tests and golden data, and what they cover.
	Evidence string `json:"evidence,omitempty"`
}

// AssetFolder is one user-supplied folder a task needs for a full
// reproduction.
type AssetFolder struct {
	// Folder is its name inside the task's assets folder.
	Folder string `json:"folder"`
	// Holds says what it is and where it comes from.
	Holds string `json:"holds"`
}

// The values of Coverage.Reproduces.
const (
	// ReproducesFull: scores equal the reference's for the same answers,
	// given Assets; checked against the reference's own code.
	ReproducesFull = "full"
	// ReproducesPartial: known differences (Differs).
	ReproducesPartial = "partial"
	// ReproducesUnchecked: written after the reference, no known
	// difference, but not shown equal to its code on the whole scoring.
	ReproducesUnchecked = "unchecked"
	// ReproducesOwn: a ttis task with no external reference.
	ReproducesOwn = "own"
	// ReproducesNone: not runnable in ttis (Info.NotRunnable says why).
	ReproducesNone = "none"
)

// The values of Coverage.Checked.
const (
	CheckedReferenceCode = "reference-code"
	CheckedPartly        = "reference-code-in-part"
	CheckedRederived     = "re-derivation"
	CheckedNone          = "none"
)

// Certifiable says whether a run of the task can prove the reference's
// score (a full reproduction), given its assets.
func (c Coverage) Certifiable() bool { return c.Reproduces == ReproducesFull }

// ifevalAssets are the folders --dataset ifeval=DIR (and the variants)
// reads.
var ifevalAssets = []AssetFolder{
	{Folder: ifeval.PunktDir, Holds: "NLTK's English Punkt parameters: the tokenizers/punkt_tab/english folder (abbrev_types.txt, collocations.tab, ortho_context.tab, sent_starters.txt) that nltk.download('punkt_tab') installs; for number_sentences and capital_word_frequency"},
	{Folder: ifeval.LangdetectDir, Holds: "langdetect's profiles folder (Debian python3-langdetect: /usr/lib/python3/dist-packages/langdetect/profiles); for response_language, english_capital and english_lowercase"},
}

const ifevalEvidence = "evalsuite/ifeval TestMatchesLMEval: 2,800 generated responses over all 25 instructions, strict and loose verdicts of lm-eval's own instruction classes (testdata/lmeval_golden.json, lm-eval 4e7e0d47, NLTK 3.9.1, langdetect 1.0.9); TestLiveLMEval reruns lm-eval where it is set up"

const ifevalDiffers = "lm-eval calls langdetect unseeded, so on a text whose trials disagree its language can change between runs (6 of the 2,800 corpus items); ttis detects with seed 0, langdetect's answer with DetectorFactory.seed = 0"

// rederived is the coverage of a task written after its reference and
// checked only against Python re-derivations of it (or not at all).
func rederived(evidence string) Coverage {
	return Coverage{Reproduces: ReproducesUnchecked, Checked: CheckedRederived, Evidence: evidence}
}

func inPart(evidence string) Coverage {
	return Coverage{Reproduces: ReproducesUnchecked, Checked: CheckedPartly, Evidence: evidence}
}

const filterEvidence = "evalsuite/filter TestMatchesLMEvalCode: the regex, remove_whitespace and take_first filters and exact_match against lm-eval's own classes (4e7e0d47); prompts and the rest re-derived"

// coverage is every task's coverage; TestEveryTaskHasCoverage keeps it
// complete. Tasks that are not runnable get ReproducesNone from their
// registration.
var coverage = map[string]Coverage{
	"ifeval":                   {Reproduces: ReproducesFull, Assets: ifevalAssets, Differs: ifevalDiffers, Checked: CheckedReferenceCode, Evidence: ifevalEvidence},
	"leaderboard_ifeval":       {Reproduces: ReproducesFull, Assets: ifevalAssets, Differs: ifevalDiffers + "; lm_eval/tasks/leaderboard/ifeval's instructions differ from lm_eval/tasks/ifeval's only in style", Checked: CheckedReferenceCode, Evidence: ifevalEvidence},
	"meta_ifeval":              {Reproduces: ReproducesFull, Assets: ifevalAssets, Differs: ifevalDiffers + "; the cookbook scores with lm-eval's IFEval instructions", Checked: CheckedReferenceCode, Evidence: ifevalEvidence + "; the join with Meta's details re-derived"},
	"ttis_ifeval":              {Reproduces: ReproducesOwn, Assets: ifevalAssets, Checked: CheckedReferenceCode, Evidence: "ttis's generated prompts, scored by the IFEval checks: " + ifevalEvidence},
	"ttis_arith":               {Reproduces: ReproducesOwn, Checked: CheckedNone, Evidence: "ttis's own task (evalsuite/builtin tests)"},
	"ttis_arith_mc":            {Reproduces: ReproducesOwn, Checked: CheckedNone, Evidence: "ttis's own task (evalsuite/builtin tests)"},
	"ttis_arith_mc_generative": {Reproduces: ReproducesOwn, Checked: CheckedNone, Evidence: "ttis's own task (evalsuite/builtin tests)"},

	"gsm8k":           inPart(filterEvidence),
	"gsm8k_cot":       inPart(filterEvidence),
	"mmlu_generative": inPart(filterEvidence + " (get_response)"),
	"mmlu":            rederived("evalsuite/tasks tests: prompts and log-likelihood choice re-derived from lm-eval's YAML"),
	"mmlu_pro":        rederived("evalsuite/tasks mmlupro_test.go, evalsuite/filter multichoice_golden.json (re-derived with Python's re, testdata/multichoice_check.py)"),

	"gpqa_diamond_zeroshot":           inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_main_zeroshot":              inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_extended_zeroshot":          inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_diamond_cot_zeroshot":       inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_main_cot_zeroshot":          inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_extended_cot_zeroshot":      inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_diamond_generative_n_shot":  inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_main_generative_n_shot":     inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"gpqa_extended_generative_n_shot": inPart(filterEvidence + "; shuffles re-derived (gpqa_expected.py)"),
	"meta_gpqa":                       rederived("evalsuite/tasks metagpqa_test.go"),
	"meta_gpqa_cot":                   rederived("evalsuite/tasks metagpqa_test.go"),

	"r1_gpqa_diamond": inPart("evalsuite/tasks/internal/r1grade TestMatchesFork: postprocess, choice_answer_clean and process_results_gpqa of the fork's r1_evals/utils.py run in Python (testdata/golden.json)"),
	"r1_aime24":       inPart("evalsuite/tasks/internal/r1grade TestMatchesFork: the fork's answer extraction run in Python; the latex2sympy equivalence re-derived (evalsuite/mathequiv)"),
	"r1_math500":      inPart("evalsuite/tasks/internal/r1grade TestMatchesFork: the fork's answer extraction run in Python; the latex2sympy equivalence re-derived (evalsuite/mathequiv)"),

	"leaderboard_math_hard": inPart("evalsuite/mathequiv TestMinervaMatchesPython: last_boxed_only_string, remove_boxed, normalize_final_answer, get_unnormalized_answer of lm-eval's leaderboard/math/utils.py run in Python (minerva_golden.json); sympy/math_verify equivalence re-derived (math_verify is not packaged for Debian)"),
	"meta_math":             inPart("evalsuite/mathequiv TestMinervaMatchesPython (extraction and normalisation, lm-eval's code run in Python); equivalence re-derived"),
	"aime25":                inPart("evalsuite/mathequiv TestMinervaMatchesPython: strip_string of lm-eval's aime/utils.py run in Python; the rest re-derived"),

	"mmmu_val":   inPart("evalsuite/tasks TestMMMUMatchesPython: lmms-eval v0.4.1's utils.py functions run in Python (mmmu_expected.json)"),
	"chartqa":    rederived("evalsuite/tasks vision_test.go"),
	"docvqa_val": rederived("evalsuite/tasks vision_test.go (ANLS re-derived)"),

	"longbench_code_e":          inPart("evalsuite/metric TestLongBenchMatchesPython: the rouge package, difflib and LongBench's normalize_answer run in Python (longbench_golden.json); task assembly re-derived"),
	"longbench_fewshot_e":       inPart("evalsuite/metric TestLongBenchMatchesPython: the rouge package, difflib and LongBench's normalize_answer run in Python (longbench_golden.json); task assembly re-derived"),
	"longbench_multi_e":         inPart("evalsuite/metric TestLongBenchMatchesPython: the rouge package, difflib and LongBench's normalize_answer run in Python (longbench_golden.json); task assembly re-derived"),
	"longbench_single_e":        inPart("evalsuite/metric TestLongBenchMatchesPython: the rouge package, difflib and LongBench's normalize_answer run in Python (longbench_golden.json); task assembly re-derived"),
	"longbench_summarization_e": inPart("evalsuite/metric TestLongBenchMatchesPython: the rouge package, difflib and LongBench's normalize_answer run in Python (longbench_golden.json); task assembly re-derived"),
	"longbench_synthetic_e":     inPart("evalsuite/metric TestLongBenchMatchesPython: the rouge package, difflib and LongBench's normalize_answer run in Python (longbench_golden.json); task assembly re-derived"),

	"humaneval_instruct": rederived("evalsuite/tasks code_test.go (the sandboxed harness re-derived)"),
	"mbpp_instruct":      rederived("evalsuite/tasks code_test.go (the sandboxed harness re-derived)"),
	"livecodebench":      inPart("evalsuite/tasks/testdata/livecodebench_crosscheck.py runs the fork's own testing_util.py beside ttis's harness by hand; no committed golden output"),

	"load_image": {Reproduces: ReproducesPartial, Checked: CheckedPartly,
		Differs:  "classifier images are sent as the dataset's own JPEG in plain base64 where the reference re-encodes them with PIL into a data URL; MobileNetV2 is graded against its published top-1, since the reference's device-versus-CPU check compares a server with itself; val2014.npz is identified by its git blob, not a sha256; ftfy's mojibake repair is not ported (the reference captions are ASCII, where it never applies)",
		Evidence: "runtime/cpu/vision: CLIP ViT-B/32 and the FID Inception against open_clip 2.26.1 and tt-inference-server's inception.py run in Python (layer goldens, 1e-6 relative), CLIP's tokenizer against open_clip.tokenize on 290 prompts; evalsuite/fid against scipy's sqrtm formula; evalsuite/cocoeval against pycocotools' COCOeval (all 12 figures, 1e-12); the prompt selection, request settings and grading re-derived from tt-inference-server's sdxl_accuracy_utils"},
	"load_video": {Reproduces: ReproducesPartial, Checked: CheckedPartly,
		Differs:  "FVD and FVMD are not measured: the reference's are its own approximations over FineVideo clips, reported and never graded",
		Evidence: "runtime/cpu/vision (CLIP against open_clip, as for load_image); frame sampling (every 8th frame) and the range grading re-derived from tt-inference-server's video eval"},

	"librispeech_test_other": rederived("evalsuite/tasks media_test.go (Whisper's normalisers and WER re-derived)"),
	"embedding":              rederived("evalsuite/tasks media_test.go (Spearman of cosines re-derived)"),
	"tts_generation":         rederived("evalsuite/tasks media_test.go"),

	"niah_single_1":   withAssets(wordAssets, "evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_words_expected.py"),
	"niah_single_2":   withAssets(essayAssets, "evalsuite/tasks ruler_essay_test.go: documents re-derived by testdata/ruler_essay_expected.py"),
	"niah_single_3":   withAssets(essayAssets, "evalsuite/tasks ruler_essay_test.go: documents re-derived by testdata/ruler_essay_expected.py"),
	"niah_multikey_1": withAssets(essayAssets, "evalsuite/tasks ruler_essay_test.go: documents re-derived by testdata/ruler_essay_expected.py"),
	"niah_multikey_2": withAssets(wordAssets, "evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_words_expected.py"),
	"niah_multikey_3": rederived("evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_expected.py"),
	"niah_multivalue": withAssets(essayAssets, "evalsuite/tasks ruler_essay_test.go: documents re-derived by testdata/ruler_essay_expected.py"),
	"niah_multiquery": withAssets(essayAssets, "evalsuite/tasks ruler_essay_test.go: documents re-derived by testdata/ruler_essay_expected.py"),
	"ruler_vt":        rederived("evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_vt_expected.py"),
	"ruler_cwe":       withAssets(wordAssets, "evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_cwe_expected.py"),
	"ruler_fwe":       rederived("evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_fwe_expected.py"),
	"ruler_qa_hotpot": rederived("evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_qa_expected.py"),
	"ruler_qa_squad":  rederived("evalsuite/tasks ruler_test.go: documents re-derived by testdata/ruler_squad_expected.py"),
}

var (
	wordAssets  = []AssetFolder{{Folder: "wonderwords", Holds: "wonderwords' assets folder (site-packages/wonderwords/assets: adjectivelist.txt, nounlist.txt)"}}
	essayAssets = append(append([]AssetFolder(nil), wordAssets...), AssetFolder{Folder: essayPunktDir, Holds: "NLTK's tokenizers/punkt_tab/english folder"})
)

// withAssets is rederived for a RULER task whose --dataset folder holds
// user-supplied inputs.
func withAssets(a []AssetFolder, evidence string) Coverage {
	c := rederived(evidence)
	c.Assets = a
	return c
}

// coverageOf is the registered coverage of a task.
func coverageOf(info Info) Coverage {
	if info.NotRunnable != "" {
		return Coverage{Reproduces: ReproducesNone, Differs: info.NotRunnable, Checked: CheckedNone}
	}
	if c, ok := coverage[info.Name]; ok {
		return c
	}
	return Coverage{Reproduces: ReproducesUnchecked, Checked: CheckedNone}
}

// IsAssetsFolder says whether path, given as task's dataset, is the
// folder of the task's user-supplied assets (Coverage.Assets) rather than
// its data: the task then still reads its Hub data.
func IsAssetsFolder(task, path string) bool {
	if !assetsFolderTasks[task] || path == "" {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// assetsFolderTasks read a folder given as their dataset as their assets
// (RULER's tasks read theirs as their dataset, which it is).
var assetsFolderTasks = map[string]bool{"ifeval": true, "leaderboard_ifeval": true, "meta_ifeval": true, "ttis_ifeval": true}
