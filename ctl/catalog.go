package ctl

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/units/catalog"
)

// catalogCommand lists the embedded model catalog: every model with the
// devices it runs on, or one model's specs in detail.
func catalogCommand() *cli.Command {
	return &cli.Command{
		Name:      "catalog",
		Usage:     "list the models ttis can serve, the devices they run on and their targets",
		ArgsUsage: "[MODEL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "device", Usage: "only specs for this device type (n150, n300, t3k, ...)"},
			&cli.BoolFlag{Name: "all", Usage: "include non-default implementations in the table"},
			devModeFlag("list tt-inference-server's development specs (a unit's catalog = \"dev\")"),
		},
		Action: func(c *cli.Context) error {
			if _, err := positional(c, 0, 1); err != nil {
				return err
			}
			var specs []catalog.Spec
			mode := catalog.ModeProd
			if c.Bool("dev-mode") {
				mode = catalog.ModeDev
			}
			model := c.Args().First()
			var err error
			if model != "" {
				if specs, err = catalog.ModelSpecsIn(mode, model); err != nil {
					return failure(exitNoUnit, "%v", err)
				}
			} else if specs, err = catalog.SpecsIn(mode); err != nil {
				return failure(exitError, "%v", err)
			}
			if dev := c.String("device"); dev != "" {
				d, err := catalog.Device(dev)
				if err != nil {
					return usageError(c, "--device: %v", err)
				}
				specs = filterSpecs(specs, func(s catalog.Spec) bool { return s.Device == d.Name })
			}
			if asJSON, err := jsonOutput(c); err != nil {
				return err
			} else if asJSON {
				out := make([]catalogEntry, len(specs))
				for i := range specs {
					out[i] = catalogEntry{specs[i], releaseOf(&specs[i])}
				}
				return writeJSON(c.App.Writer, out)
			}
			if model != "" {
				return printCatalogDetail(c.App.Writer, specs)
			}
			if !c.Bool("all") {
				specs = filterSpecs(specs, func(s catalog.Spec) bool { return s.DefaultImpl })
			}
			return printCatalogTable(c.App.Writer, specs)
		},
	}
}

// catalogEntry is a spec as `catalog -o json` writes it: with whether a
// release of it can complete.
type catalogEntry struct {
	catalog.Spec
	Release catalog.Completeness `json:"release"`
}

// releaseOf says whether every accuracy reference of the spec's model is
// something ttis can measure.
func releaseOf(s *catalog.Spec) catalog.Completeness {
	return catalog.ReleaseCompleteness(s, tasks.WhyNotMeasurable)
}

// releaseCell is a table's word for a release's completeness: the
// references that keep it incomplete, by task.
func releaseCell(c catalog.Completeness) string {
	var held []string
	for _, u := range c.Unmeasurable {
		if !u.Waived {
			held = append(held, u.Task)
		}
	}
	switch {
	case c.References == 0:
		return "no eval refs"
	case len(held) == 0:
		return "can complete"
	}
	return "incomplete: " + strings.Join(held, ",")
}

func filterSpecs(specs []catalog.Spec, keep func(catalog.Spec) bool) []catalog.Spec {
	var out []catalog.Spec
	for _, s := range specs {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// catalogRow groups the specs of one model that share status, type and
// implementation, so a model whose devices differ in status gets a row per
// status.
type catalogRow struct {
	model, status, modelType, engine, impl, release string
	devices                                         []string
}

func printCatalogTable(w io.Writer, specs []catalog.Spec) error {
	var rows []*catalogRow
	index := map[string]*catalogRow{}
	for _, s := range specs {
		key := strings.Join([]string{s.ModelName, s.Status, s.ModelType, s.Impl}, "\x00")
		r, ok := index[key]
		if !ok {
			r = &catalogRow{model: s.ModelName, status: s.Status, modelType: s.ModelType, engine: s.Engine, impl: s.Impl, release: releaseCell(releaseOf(&s))}
			index[key] = r
			rows = append(rows, r)
		}
		r.devices = append(r.devices, fmt.Sprintf("%s:%d/%s", s.Device, s.MaxConcurrency, shortTokens(s.MaxContext)))
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "MODEL\tDEVICES (CONC/CTX)\tSTATUS\tTYPE\tENGINE\tIMPL\tRELEASE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.model, strings.Join(r.devices, " "), r.status, r.modelType, strings.ToLower(r.engine), r.impl, r.release)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d specs in %d rows. `ttisctl catalog MODEL` shows targets and why a release cannot complete; --all adds non-default implementations.\n", len(specs), len(rows))
	return err
}

func printCatalogDetail(w io.Writer, specs []catalog.Spec) error {
	if len(specs) == 0 {
		_, err := fmt.Fprintln(w, "no specs")
		return err
	}
	for i, s := range specs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		def := ""
		if !s.DefaultImpl {
			def = " (not the default implementation)"
		}
		fmt.Fprintf(w, "%s on %s%s\n", s.HFRepo, s.Device, def)
		tw := newTable(w)
		field := func(k, v string) { fmt.Fprintf(tw, "  %s:\t%s\n", k, v) }
		field("Model ID", s.ModelID)
		field("Status", fmt.Sprintf("%s (must pass: %s)", s.Status, orNone(catalog.RequiredTiers(s.Status))))
		field("Type", fmt.Sprintf("%s, engine %s, impl %s", s.ModelType, strings.ToLower(s.Engine), s.Impl))
		limits := fmt.Sprintf("max_concurrency %d, max_context %d, max_tokens_all_users %d", s.MaxConcurrency, s.MaxContext, s.MaxTokensAllUsers)
		if s.DataParallel > 1 {
			limits += fmt.Sprintf(", data parallel %d (per engine %d seqs", s.DataParallel, s.MaxNumSeqs)
			if s.TargetsDevice != "" {
				// The device's own table when the reference has one, else
				// the sub-device's, scaled (units/catalog specTargets).
				limits += ", targets from " + s.TargetsDevice
			}
			limits += ")"
		}
		field("Limits", limits)
		if s.MinDiskGB > 0 || s.MinRAMGB > 0 {
			field("Host", fmt.Sprintf("disk >= %d GB, RAM >= %s GB", s.MinDiskGB, strconv.FormatFloat(s.MinRAMGB, 'f', -1, 64)))
		}
		field("Image", s.DockerImage)
		if s.IsMedia() {
			if m, err := catalog.MediaLayout(&s); err == nil {
				field("Media", fmt.Sprintf("service %s, runner %s, %d worker(s) of mesh %dx%d, batch %d", s.MediaService(), m.Runner, m.Workers, m.Mesh[0], m.Mesh[1], m.MaxBatchSize))
			}
		}
		if r := s.SystemRequirements; r != nil {
			field("Requires", strings.TrimSpace(fmt.Sprintf("%s %s", prefixed("firmware ", r.Firmware), prefixed("kmd ", r.KMD))))
		}
		for _, k := range s.KnownIssues {
			field("Waived", strings.TrimSuffix(k.Workflow+" "+k.Task, " "))
		}
		rel := releaseOf(&s)
		field("Release", releaseCell(rel))
		for _, u := range rel.Unmeasurable {
			why := u.Why
			if u.Waived {
				why = "waived by a known issue: " + why
			}
			field("  "+u.Task, why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := printTargets(w, &s); err != nil {
			return err
		}
	}
	return nil
}

func printTargets(w io.Writer, s *catalog.Spec) error {
	tiers := catalog.Tiers(s)
	if len(tiers) == 0 {
		_, err := fmt.Fprintln(w, "  Targets:  none in the performance reference")
		return err
	}
	fmt.Fprintln(w, "  Targets:")
	tw := newTable(w)
	fmt.Fprintln(tw, "    TIER\tISL/OSL\tCONC\tTTFT_MS <=\tTPUT_USER >=\tTPUT >=")
	for _, t := range tiers {
		for _, p := range t.Targets {
			shape := "-"
			if p.ISL > 0 {
				shape = fmt.Sprintf("%d/%d", p.ISL, p.OSL)
			}
			fmt.Fprintf(tw, "    %s\t%s\t%d\t%s\t%s\t%s\n", t.Tier, shape, p.Concurrency, num(p.TTFTms), num(p.TputUser), num(p.Tput))
		}
	}
	return tw.Flush()
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0) }

// shortTokens writes a context length as "128k" when it is a whole number
// of kibi-tokens.
func shortTokens(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "k"
	}
	return strconv.Itoa(n)
}

func num(f float64) string {
	if f == 0 {
		return "-"
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing (experimental)"
	}
	return strings.Join(s, ", ")
}

func prefixed(p, v string) string {
	if v == "" {
		return ""
	}
	return p + v
}
