package dataset

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/units/hardened"
)

// maxDirEntries bounds the files of a dataset folder (the shards of one
// split).
const maxDirEntries = 100_000

// LoadDir reads every data file of a folder (a split stored as several
// shards, as the Hub keeps large splits), in name order, as one dataset:
// document ids run on across the files. Hidden files are skipped; a file
// whose format cannot be told from its extension is an error.
func LoadDir(dir string, opts Options) ([]evalsuite.Doc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	entries, err := hardened.ReadDir(ctx, dir, maxDirEntries)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("dataset %s: the folder has no data files", dir)
	}
	sort.Strings(names)
	var docs []evalsuite.Doc
	for _, name := range names {
		part, err := Load(filepath.Join(dir, name), opts)
		if err != nil {
			return nil, err
		}
		for _, d := range part {
			d.ID = len(docs)
			docs = append(docs, d)
		}
		if opts.MaxRows > 0 && len(docs) >= opts.MaxRows {
			docs = docs[:opts.MaxRows]
			break
		}
	}
	return docs, nil
}
