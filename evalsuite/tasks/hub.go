package tasks

import (
	"fmt"
	"strings"
)

// HubData is one split of a Hugging Face dataset that a task reads, in the
// terms its definition loads it (lm-eval's dataset_path, dataset_name and
// split). The Hub client fetches Files from Repo at Revision; the task then
// reads the files as local files, whose columns are the Hub copy's.
type HubData struct {
	// Role says what the split is for: RoleTest (the evaluated documents),
	// RoleFewShot (the example pool) or a task-specific role.
	Role string `json:"role"`
	// Repo is the dataset repository ("openai/gsm8k"); "{model}" stands for
	// the catalog model's repository basename (Meta's per-model eval sets).
	Repo string `json:"repo"`
	// Config is the dataset configuration (lm-eval's dataset_name); empty
	// for the default one.
	Config string `json:"config,omitempty"`
	Split  string `json:"split"`
	// Revision is the commit or branch to read. Empty means the
	// repository's default branch, which is what lm-eval loads when its
	// YAML pins nothing; RevisionParquet is the Hub's converted-Parquet
	// branch, used where the repository keeps its data in a script or in
	// files whose names are not stable.
	Revision string `json:"revision,omitempty"`
	// Files is a glob of the data files of the split within the
	// repository at Revision.
	Files string `json:"files"`
	// Gated is set when the Hub asks for an accepted licence and a token.
	Gated bool `json:"gated,omitempty"`
}

// The roles of a task's data.
const (
	RoleTest    = "test"
	RoleFewShot = "fewshot"
)

// RevisionParquet is the branch where the Hub keeps every dataset
// converted to Parquet, laid out <config>/<split>/NNNN.parquet.
const RevisionParquet = "refs/convert/parquet"

// parquetSplit declares a split read from the converted-Parquet branch.
func parquetSplit(role, repo, config, split string) HubData {
	c := config
	if c == "" {
		c = "default"
	}
	return HubData{Role: role, Repo: repo, Config: config, Split: split, Revision: RevisionParquet, Files: c + "/" + split + "/*.parquet"}
}

// describeData names a task's Hub data for error messages.
func describeData(data []HubData) string {
	if len(data) == 0 {
		return "no Hub dataset is declared"
	}
	var parts []string
	for _, d := range data {
		s := d.Repo
		if d.Config != "" {
			s += " " + d.Config
		}
		parts = append(parts, fmt.Sprintf("%s (%s split %s)", s, d.Role, d.Split))
	}
	return strings.Join(parts, ", ")
}

// The data of the tasks registered in tasks.go.
var (
	gsm8kData = []HubData{
		{Role: RoleTest, Repo: "openai/gsm8k", Config: "main", Split: "test", Files: "main/test-*.parquet"},
		{Role: RoleFewShot, Repo: "openai/gsm8k", Config: "main", Split: "train", Files: "main/train-*.parquet"},
	}
	mmluData = []HubData{
		{Role: RoleTest, Repo: "cais/mmlu", Config: "all", Split: "test", Files: "all/test-*.parquet"},
		{Role: RoleFewShot, Repo: "cais/mmlu", Config: "all", Split: "dev", Files: "all/dev-*.parquet"},
	}
	mmluProData = []HubData{
		{Role: RoleTest, Repo: "TIGER-Lab/MMLU-Pro", Split: "test", Files: "data/test-*.parquet"},
		{Role: RoleFewShot, Repo: "TIGER-Lab/MMLU-Pro", Split: "validation", Files: "data/validation-*.parquet"},
	}
)

// gpqaData is the gated Idavidrein/gpqa subset (diamond, main, extended),
// read from its CSV file as lm-eval's gpqa tasks load it (split train).
func gpqaData(subset string) []HubData {
	return []HubData{{Role: RoleTest, Repo: "Idavidrein/gpqa", Config: "gpqa_" + subset, Split: "train", Files: "gpqa_" + subset + ".csv", Gated: true}}
}

// metaDetails is one "<task>__details" configuration of Meta's gated
// per-model evaluation sets (meta-llama/<model>-evals), split "latest".
func metaDetails(task string) []HubData {
	return []HubData{parquetGated(parquetSplit(RoleTest, "meta-llama/{model}-evals", "{model}-evals__"+task+"__details", "latest"))}
}

func parquetGated(d HubData) HubData {
	d.Gated = true
	return d
}
