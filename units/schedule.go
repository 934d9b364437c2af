package units

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Workflows a schedule can run.
var scheduleWorkflows = []string{"benchmarks", "evals", "tests", "release"}

// Cron parses the schedule's calendar (a standard 5-field cron spec or a
// descriptor such as "@daily") in its time zone (UTC when none is set). It
// rejects specs that can never fire, such as "0 0 30 2 *".
func (s Schedule) Cron() (cron.Schedule, error) {
	return parseCalendar(s.Calendar, s.Timezone, time.Now())
}

// parseCalendar parses spec in zone and checks it fires after now. The zone
// is applied by ttis, not with a CRON_TZ= prefix, so a prefix in the spec is
// refused (robfig/cron panics on some malformed prefixes).
func parseCalendar(spec, zone string, now time.Time) (sched cron.Schedule, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("calendar is empty")
	}
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		return nil, fmt.Errorf("calendar %q: set the time zone with the timezone key, not a prefix", spec)
	}
	loc := time.UTC
	if zone != "" {
		if loc, err = time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("unknown timezone %q", zone)
		}
	}
	defer func() {
		// The parser is unmaintained and known to panic on odd input; a
		// bad calendar must be an error, never a crash.
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid calendar %q", spec)
		}
	}()
	sched, err = cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("invalid calendar %q: %v", spec, err)
	}
	if sched.Next(now.In(loc)).IsZero() {
		return nil, fmt.Errorf("calendar %q never fires", spec)
	}
	if zone != "" {
		return inZone{sched, loc}, nil
	}
	return inZone{sched, time.UTC}, nil
}

// inZone evaluates a schedule in a fixed location.
type inZone struct {
	s   cron.Schedule
	loc *time.Location
}

// Next returns the next activation after t, in t's location.
func (z inZone) Next(t time.Time) time.Time {
	n := z.s.Next(t.In(z.loc))
	if n.IsZero() {
		return n
	}
	return n.In(t.Location())
}
