package unitdoc

import (
	"strings"

	"github.com/ttis-dev/ttis/packaging/clidoc"
)

// Page renders the schema as ttis.unit(5). example is a unit file shown
// under EXAMPLES.
func (s *Schema) Page(source, example string) clidoc.Page {
	p := clidoc.Page{
		Name:    "ttis.unit",
		Section: 5,
		Source:  source,
		Summary: "ttis unit file format: one TOML file per served model",
		Synopsis: []string{
			"/etc/ttis/units/NAME.toml",
		},
	}
	p.Sections = append(p.Sections, clidoc.Section{Title: "DESCRIPTION", Blocks: []clidoc.Block{
		{Text: "A unit file declares one inference server that ttisd(8) keeps running. The unit's name is the file name without .toml. ttisd watches the units folder (units_dir in /etc/ttis/ttisd.toml) and reconciles what runs with what is declared; a broken edit never stops a running unit: it keeps its last good version and ttisctl status shows the error with file, line, column and key."},
		{Text: "Files are TOML (https://toml.io). Keys are decoded strictly: an unknown key, a value of the wrong type or a duration without a unit (\"30s\", \"10m\") is an error. Zero or absent limits are filled from the model catalog's entry for (model, device); ttisctl catalog lists it."},
		{Text: "Check a file offline, with the same checks the daemon runs:"},
		{Text: "  ttisctl validate /etc/ttis/units/NAME.toml", Literal: true},
	}})
	var top []clidoc.Block
	for _, k := range s.Top {
		top = append(top, keyBlock(k))
	}
	p.Sections = append(p.Sections, clidoc.Section{Title: "KEYS", Blocks: top})
	for _, t := range s.Tables {
		head := "[" + t.Name + "]"
		if t.Array {
			head = "[[" + t.Name + "]]"
		}
		blocks := []clidoc.Block{{Text: t.Doc}}
		if t.Array {
			blocks = append(blocks, clidoc.Block{Text: "The table may be repeated; each [[" + t.Name + "]] adds one entry."})
		}
		for _, k := range t.Keys {
			blocks = append(blocks, keyBlock(k))
		}
		p.Sections = append(p.Sections, clidoc.Section{Title: "TABLE " + head, Blocks: blocks})
	}
	if example != "" {
		p.Sections = append(p.Sections, clidoc.Section{Title: "EXAMPLES", Blocks: []clidoc.Block{
			{Text: indent(example), Literal: true},
		}})
	}
	p.Sections = append(p.Sections,
		clidoc.Section{Title: "FILES", Blocks: []clidoc.Block{
			{Tag: "/etc/ttis/units/*.toml", Text: "Unit files (the default units_dir)."},
			{Tag: "/etc/ttis/secrets/", Text: "Secret files named by auth.secret_file; they must not be readable by group or others."},
		}},
		clidoc.Section{Title: "SEE ALSO", Blocks: []clidoc.Block{{Text: "ttisd(8), ttisctl(1)"}}},
	)
	return p
}

func keyBlock(k Key) clidoc.Block {
	return clidoc.Block{Tag: k.Name + " (" + k.Type + ")", Text: k.Doc}
}

// indent makes every line of text a literal line for clidoc.
func indent(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}
