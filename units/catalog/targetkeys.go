package catalog

import (
	"path"
	"strings"
)

// TargetKeys are the model keys under which a targets file
// (model_performance_reference.json's shape, OVERRIDE_BENCHMARK_TARGETS)
// may list a model's points, most specific first: the model as named, its
// base name, then, for a catalog spec, the reference key its template's
// targets are read under (the first weight, as run.py keys them), the
// template's other weights, and each of those without "-Instruct".
// The last form is the key of seed-era files: seed 003 keys the 70B
// template "Llama-3.3-70B", the base weight the template listed first then
// (it has since been dropped as a repository that does not exist).
func TargetKeys(model string, spec *Spec) []string {
	var keys []string
	seen := map[string]bool{}
	add := func(k string) {
		if k == "" || seen[strings.ToLower(k)] {
			return
		}
		seen[strings.ToLower(k)] = true
		keys = append(keys, k)
	}
	if model != "" {
		add(model)
		add(path.Base(model))
	}
	if spec == nil {
		return keys
	}
	add(spec.TargetsModel)
	add(spec.ModelName)
	var names []string
	for _, w := range spec.Weights {
		names = append(names, path.Base(w))
	}
	for _, n := range names {
		add(n)
	}
	for _, n := range append([]string{spec.TargetsModel}, names...) {
		add(strings.TrimSuffix(n, "-Instruct"))
	}
	return keys
}
