package tasks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// The LongBench-E groups follow upstream lm-eval's lm_eval/tasks/longbench
// (the _longbench_*_e.yaml groups and their <subtask>_e.yaml tasks, task
// versions 5.0, code 6.0, with the unified "score" metric the catalog
// grades as "score,none"). Each group's value is the plain mean of its
// subtasks' scores (weight_by_size: false). The data is
// Xnhyacinth/LongBench, one configuration per subtask, in its own columns
// (context, question, answers, all_classes, ...).

// longbenchSub is one LongBench-E subtask.
type longbenchSub struct {
	name    string // the dataset configuration, e.g. "qasper_e"
	prompt  string // doc_to_text with {context} and {question}
	maxToks int
	until   []string
	score   string // qa_f1, rouge, classification, count, retrieval, code_sim
	version string
}

const (
	lbQasper   = "You are given a scientific article and a question. Answer the question as concisely as you can, using a single phrase or sentence if possible. If the question cannot be answered based on the information in the article, write \"unanswerable\". If the question is a yes/no question, answer \"yes\", \"no\", or \"unanswerable\". Do not provide any explanation.\n\nArticle: {context}\n\n Answer the question based on the above article as concisely as you can, using a single phrase or sentence if possible. If the question cannot be answered based on the information in the article, write \"unanswerable\". If the question is a yes/no question, answer \"yes\", \"no\", or \"unanswerable\". Do not provide any explanation.\n\nQuestion: {question}\n\nAnswer:"
	lbPassages = "Answer the question based on the given passages. Only give me the answer and do not output any other words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the given passages. Only give me the answer and do not output any other words.\n\nQuestion: {question}\nAnswer:"
)

var longbenchGroups = []struct {
	name, alias string
	subs        []longbenchSub
}{
	{"longbench_single_e", "Single-Document QA (LongBench-E)", []longbenchSub{
		{"qasper_e", lbQasper, 128, nil, "qa_f1", "5.0"},
		{"multifieldqa_en_e", "Read the following text and answer briefly.\n\n{context}\n\nNow, answer the following question based on the above text, only give me the answer and do not output any other words.\n\nQuestion: {question}\nAnswer:", 64, nil, "qa_f1", "5.0"},
	}},
	{"longbench_multi_e", "Multi-Document QA (LongBench-E)", []longbenchSub{
		{"hotpotqa_e", lbPassages, 32, nil, "qa_f1", "5.0"},
		{"2wikimqa_e", lbPassages, 32, nil, "qa_f1", "5.0"},
	}},
	{"longbench_summarization_e", "Summarization (LongBench-E)", []longbenchSub{
		{"gov_report_e", "You are given a report by a government agency. Write a one-page summary of the report.\n\nReport:\n{context}\n\nNow, write a one-page summary of the report.\n\nSummary:", 512, nil, "rouge", "5.0"},
		{"multi_news_e", "You are given several news passages. Write a one-page summary of all news. \n\nNews:\n{context}\n\nNow, write a one-page summary of all the news.\n\nSummary:", 512, nil, "rouge", "5.0"},
	}},
	{"longbench_fewshot_e", "Few-shot Learning (LongBench-E)", []longbenchSub{
		{"trec_e", "Please determine the type of the question below. Here are some examples of questions.\n\n{context}\n{question}", 64, []string{"\n"}, "classification", "5.0"},
		{"triviaqa_e", "Answer the question based on the given passage. Only give me the answer and do not output any other words. The following are some examples.\n\n{context}\n{question}", 32, []string{"\n"}, "qa_f1", "5.0"},
		{"samsum_e", "Summarize the dialogue into a few short sentences. The following are some examples.\n\n{context}\n{question}", 128, []string{"\n"}, "rouge", "5.0"},
	}},
	{"longbench_synthetic_e", "Synthetic Tasks (LongBench-E)", []longbenchSub{
		{"passage_count_e", "There are some paragraphs below sourced from Wikipedia. Some of them may be duplicates. Please carefully read these paragraphs and determine how many unique paragraphs there are after removing duplicates. In other words, how many non-repeating paragraphs are there in total?\n\n{context}\n\nPlease enter the final count of unique paragraphs after removing duplicates. The output format should only contain the number, such as 1, 2, 3, and so on.\n\nThe final answer is:", 32, nil, "count", "5.0"},
		{"passage_retrieval_en_e", "Here are 30 paragraphs from Wikipedia, along with an abstract. Please determine which paragraph the abstract is from.\n\n{context}\n\nThe following is an abstract.\n\n{question}\n\nPlease enter the number of the paragraph that the abstract is from. The answer format must be like \"Paragraph 1\", \"Paragraph 2\", etc.\n\nThe answer is:", 32, nil, "retrieval", "5.0"},
	}},
	{"longbench_code_e", "Code Completion (LongBench-E)", []longbenchSub{
		{"lcc_e", "Please complete the code given below. \n{context}Next line of code:", 64, nil, "code_sim", "6.0"},
		{"repobench-p_e", "Please complete the code given below. \n{context}{question}Next line of code:", 64, nil, "code_sim", "6.0"},
	}},
}

func init() {
	for _, g := range longbenchGroups {
		var names []string
		var data []HubData
		for _, s := range g.subs {
			names = append(names, "longbench_"+s.name)
			d := parquetSplit(RoleTest+":"+s.name, "Xnhyacinth/LongBench", s.name, "test")
			data = append(data, d)
		}
		register(Info{Name: g.name, Output: evalsuite.GenerateUntil,
			Description: "LongBench-E " + g.alias + ": the plain mean of " + strings.Join(names, ", ") + " on \"score\" (fields context, question, answers, all_classes); one local file per subtask in Files[\"test:<config>\"], or one file whose rows name their dataset",
			Follows:     "lm-eval lm_eval/tasks/longbench/_" + g.name + ".yaml and its subtasks' *_e.yaml, metrics.py",
			Data:        data}, buildLongBench(g.name))
	}
}

// longbenchFill renders "{context}" and "{question}" (the YAML's
// {{context}} and {{question}}).
func longbenchFill(tpl string, d evalsuite.Doc) (string, error) {
	ctx, err := d.Str("context")
	if err != nil {
		return "", err
	}
	out := strings.ReplaceAll(tpl, "{context}", ctx)
	if strings.Contains(tpl, "{question}") {
		q, err := d.Str("question")
		if err != nil {
			return "", err
		}
		out = strings.ReplaceAll(out, "{question}", q)
	}
	return out, nil
}

// longbenchScore is the subtask's process_results: the best score over the
// document's answers, under "score" and the metric's own name.
func longbenchScore(sub longbenchSub, d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	answers, err := d.Strings("answers")
	if err != nil {
		return nil, err
	}
	var classes []string
	if sub.score == "classification" {
		if classes, err = d.Strings("all_classes"); err != nil {
			return nil, err
		}
	}
	pred := strings.TrimSpace(resp)
	if sub.score == "code_sim" {
		pred = resp // "do not strip the prediction!"
	}
	best := 0.0
	for _, gold := range answers {
		var s float64
		switch sub.score {
		case "qa_f1":
			s = metric.QAF1(pred, gold)
		case "rouge":
			s, _ = metric.RougeL(pred, gold)
		case "classification":
			s = metric.ClassificationScore(pred, gold, classes)
		case "count":
			s = metric.CountScore(pred, gold)
		case "retrieval":
			s = metric.RetrievalScore(pred, gold)
		case "code_sim":
			s = metric.CodeSim(pred, gold)
		}
		best = max(best, s)
	}
	return evalsuite.Scores{"score": {best}, sub.score + "_score": {best}}, nil
}

func buildLongBench(group string) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		var subs []longbenchSub
		for _, g := range longbenchGroups {
			if g.name == group {
				subs = g.subs
			}
		}
		byName := map[string]longbenchSub{}
		for _, s := range subs {
			byName[s.name] = s
			byName[strings.TrimSuffix(s.name, "_e")] = s // THUDM's rows name the dataset without "_e"
		}
		var docs []evalsuite.Doc
		add := func(path, forced string) error {
			rows, err := load(path, src)
			if err != nil {
				return err
			}
			for _, d := range rows {
				name := forced
				if name == "" && d.Invalid == nil {
					ds, err := d.Str("dataset")
					if err != nil {
						return fmt.Errorf("%w (or pass each subtask's file as Files[\"test:<config>\"])", err)
					}
					name = ds
				}
				if d.Invalid == nil {
					sub, ok := byName[name]
					if !ok {
						continue // a row of another group's subtask
					}
					fields := copyFields(d.Fields)
					fields["_subtask"] = sub.name
					d.Fields = fields
				}
				d.ID = len(docs)
				docs = append(docs, d)
			}
			return nil
		}
		if src.Dataset != "" {
			if err := add(src.Dataset, ""); err != nil {
				return nil, err
			}
		}
		roles := make([]string, 0, len(src.Files))
		for role := range src.Files {
			roles = append(roles, role)
		}
		sort.Strings(roles)
		for _, role := range roles {
			name, ok := strings.CutPrefix(role, RoleTest+":")
			if !ok {
				continue
			}
			if _, known := byName[name]; !known {
				return nil, fmt.Errorf("file for %s: %s has no subtask %s", role, group, name)
			}
			if err := add(src.Files[role], name); err != nil {
				return nil, err
			}
		}
		subOf := func(d evalsuite.Doc) (longbenchSub, error) {
			name, _ := d.Fields["_subtask"].(string)
			s, ok := byName[name]
			if !ok {
				return s, fmt.Errorf("%s: no LongBench subtask", d.Source)
			}
			return s, nil
		}
		var maxToks int
		cfgSubs := map[string]any{}
		for _, s := range subs {
			maxToks = max(maxToks, s.maxToks)
			cfgSubs["longbench_"+s.name] = map[string]any{"doc_to_text": s.prompt, "max_gen_toks": s.maxToks, "until": s.until, "metric": s.score + "_score", "version": s.version}
		}
		var t *evalsuite.Task
		t = &evalsuite.Task{
			Name: group, Version: "0.0", Output: evalsuite.GenerateUntil, Docs: docs,
			DocToText: func(d evalsuite.Doc) (string, error) {
				s, err := subOf(d)
				if err != nil {
					return "", err
				}
				return longbenchFill(s.prompt, d)
			},
			DocToTarget: func(d evalsuite.Doc) (string, error) {
				a, err := d.Strings("answers")
				return strings.Join(a, " | "), err
			},
			// Each subtask's budget and stops apply per document (see
			// GenFor); Gen holds the group's largest budget, and a
			// caller that changes it overrides every subtask's.
			Gen: evalsuite.GenKwargs{MaxGenToks: maxToks, Temperature: 1},
			GenFor: func(d evalsuite.Doc) (evalsuite.GenKwargs, error) {
				s, err := subOf(d)
				g := evalsuite.GenKwargs{Until: s.until, MaxGenToks: s.maxToks, Temperature: t.Gen.Temperature}
				if t.Gen.MaxGenToks != maxToks { // a caller's override of the budget
					g.MaxGenToks = t.Gen.MaxGenToks
				}
				return g, err
			},
			Process: func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
				s, err := subOf(d)
				if err != nil {
					return nil, err
				}
				return longbenchScore(s, d, resp)
			},
			Metrics:         []evalsuite.MetricSpec{{Name: "score", Aggregation: "mean", HigherIsBetter: true}},
			SubtaskOf:       func(d evalsuite.Doc) string { s, _ := subOf(d); return "longbench_" + s.name },
			GroupUnweighted: true,
			Config: map[string]any{
				"group": group, "output_type": "generate_until", "num_fewshot": 0, "test_split": "test",
				"dataset_path": "Xnhyacinth/LongBench", "subtasks": cfgSubs,
				"generation_kwargs":     map[string]any{"temperature": 1, "do_sample": false},
				"aggregate_metric_list": []map[string]any{{"metric": "score", "weight_by_size": false}},
			},
		}
		return t, nil
	}
}
