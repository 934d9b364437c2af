// Command gendocs writes ttisctl(1), ttis.unit(5) and ttisctl's bash, zsh
// and fish completions from the live command tree (ctl.App) and the units
// package's schema. "make docs" runs it; ttisd's own page and completions
// come from "ttisd gen-docs", since ttisd's command tree lives in its main
// package.
//
//	go run ./packaging/internal/gendocs -out build/docs -version v1.2.3
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ttis-dev/ttis/ctl"
	"github.com/ttis-dev/ttis/packaging/clidoc"
	"github.com/ttis-dev/ttis/packaging/internal/unitdoc"
)

func main() {
	out := flag.String("out", "build/docs", "output folder (man/ and completions/ under it)")
	version := flag.String("version", "dev", "version shown in the pages' footer")
	example := flag.String("example", "packaging/units/sim-llama-8b.toml", "unit file shown under EXAMPLES in ttis.unit(5)")
	flag.Parse()
	if err := run(*out, *version, *example); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(out, version, examplePath string) error {
	files, err := generate(version, examplePath)
	if err != nil {
		return err
	}
	for name, body := range files {
		p := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate returns the files by their path under the output folder.
func generate(version, examplePath string) (map[string][]byte, error) {
	example, err := os.ReadFile(examplePath)
	if err != nil {
		return nil, fmt.Errorf("example unit: %w", err)
	}
	docs, err := unitdoc.SourceDocs()
	if err != nil {
		return nil, err
	}
	schema, err := unitdoc.Load(docs)
	if err != nil {
		return nil, err
	}
	app := ctl.App(version)
	source := "ttis " + version
	return map[string][]byte{
		"man/ttisctl.1":            clidoc.Man(app, ttisctlPage(source)),
		"man/ttis.unit.5":          clidoc.Render(schema.Page(source, string(example))),
		"completions/ttisctl.bash": clidoc.Bash(app),
		"completions/_ttisctl":     clidoc.Zsh(app),
		"completions/ttisctl.fish": clidoc.Fish(app),
	}, nil
}

func ttisctlPage(source string) clidoc.Page {
	var exits []clidoc.Block
	for _, e := range ctl.ExitStatuses() {
		exits = append(exits, clidoc.Block{Tag: fmt.Sprint(e.Code), Text: e.Meaning + "."})
	}
	return clidoc.Page{
		Section: 1,
		Source:  source,
		Sections: []clidoc.Section{
			{Title: "DESCRIPTION", Blocks: []clidoc.Block{
				{Text: "ttisctl is the operator's command-line client of ttisd(8). The daemon commands (status, start, stop, restart, reload, logs, devices, runs, report) talk to ttisd over its control socket; members of the ttis group may use it. validate, catalog, bench, eval, release, token and model run on their own, without a daemon."},
				{Text: "Read commands print a table, or JSON with --output json."},
			}},
			{Title: "EXIT STATUS", Blocks: exits},
			{Title: "FILES", Blocks: []clidoc.Block{
				{Tag: "/run/ttis/ttisd.sock", Text: "ttisd's control socket (--socket)."},
				{Tag: "/etc/ttis/units/", Text: "Unit files; see ttis.unit(5)."},
			}},
			{Title: "SEE ALSO", Blocks: []clidoc.Block{{Text: "ttisd(8), ttis.unit(5), systemctl(1), journalctl(1)"}}},
		},
	}
}
