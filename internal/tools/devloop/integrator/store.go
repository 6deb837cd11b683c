package integrator

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/store/local"
	"github.com/toolhost/toolhost/internal/tool"
)

// Where the integrator keeps its records, relative to the project dir. The
// port reservations and the units (their process groups) are toolhost's
// machine-local state, in .toolhost/ (written through the services' door,
// never by a command); the rest is the integrator's own directory.
const (
	PortsPath = local.PortsPath
	UnitsPath = local.UnitsPath
	LogsDir   = "integration/logs"
	CasesDir  = "integration/cases"
	RunsDir   = "integration/runs"
)

// LogCap is the size at which a unit log is rotated to <log>.1.
const LogCap = 5 << 20

// ReservationTTL is how long a port reservation holds without a live unit.
const ReservationTTL = 10 * time.Minute

// startMarker begins the line written to a unit's logs before each start,
// so tails and error signatures can tell the current run from older ones.
const startMarker = "=== toolhost: start unit "

// OutLog is a unit's stdout log.
func OutLog(unit string) string { return LogsDir + "/" + unit + ".out.log" }

// ErrLog is a unit's stderr log.
func ErrLog(unit string) string { return LogsDir + "/" + unit + ".err.log" }

// Reservation is one entry of ports.json.
type Reservation struct {
	Port       int       `json:"port"`
	ReservedAt time.Time `json:"reserved_at"`
	// OwnerPID is the toolhost process that made the reservation.
	OwnerPID  int    `json:"owner_pid"`
	SessionID string `json:"session_id,omitempty"`
	// UnitPID and UnitStartTicks name the unit process using the port; a
	// live unit holds its reservation past the TTL.
	UnitPID        int    `json:"unit_pid,omitempty"`
	UnitStartTicks uint64 `json:"unit_start_ticks,omitempty"`
}

// held reports whether the reservation still keeps its port from others.
func (r Reservation) held(c *callctx.Ctx, now time.Time) bool {
	if r.UnitPID > 0 && c.Procs.Alive(procs.Process{PID: r.UnitPID, StartTicks: r.UnitStartTicks}) {
		return true
	}
	return now.Sub(r.ReservedAt) < ReservationTTL
}

// PortsFile is the port reservations (PortsPath).
type PortsFile struct {
	Reservations map[string]Reservation `json:"reservations"`
}

// UnitRecord is one entry of units.json.
type UnitRecord struct {
	ID         string    `json:"id"`
	Argv       []string  `json:"argv"`
	Cwd        string    `json:"cwd"`
	PID        int       `json:"pid"`
	PGID       int       `json:"pgid"`
	StartTicks uint64    `json:"start_ticks"`
	StartedAt  time.Time `json:"started_at"`
	Port       int       `json:"port,omitempty"`
	// OwnerPID and OwnerStartTicks name the toolhost process that started
	// the unit; a unit whose owner is gone and that is not Detached is an
	// orphan the next spawn_units call stops.
	OwnerPID        int    `json:"owner_pid"`
	OwnerStartTicks uint64 `json:"owner_start_ticks,omitempty"`
	SessionID       string `json:"session_id,omitempty"`
	// Detached units outlive the session that started them.
	Detached bool `json:"detached,omitempty"`
	// Sandbox is how the unit is confined.
	Sandbox *confine.Report `json:"sandbox,omitempty"`
	// TempDir is the unit's private $TMPDIR, removed when it is gone.
	TempDir string `json:"temp_dir,omitempty"`
	// State is running, exited (by itself) or stopped (on request).
	State     string     `json:"state"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	ExitedAt  *time.Time `json:"exited_at,omitempty"`
	StdoutLog string     `json:"stdout_log"`
	StderrLog string     `json:"stderr_log"`
}

// group is the record's process group.
func (r *UnitRecord) group() procs.Group {
	return procs.Group{PGID: r.PGID, LeaderPID: r.PID, LeaderTicks: r.StartTicks}
}

// UnitsFile is the units started on this machine (UnitsPath).
type UnitsFile struct {
	Units map[string]*UnitRecord `json:"units"`
}

// readJSON reads a project file into v; a missing file leaves v as is.
func readJSON(c *callctx.Ctx, rel string, v any) error {
	b, err := c.Shared.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return tool.Fail(fault.Content(err), "%s is not valid JSON; fix or remove the file", rel)
	}
	return nil
}

func loadUnits(c *callctx.Ctx) (UnitsFile, error) {
	var f UnitsFile
	err := readJSON(c, UnitsPath, &f)
	return f, err
}

func loadPorts(c *callctx.Ctx) (PortsFile, error) {
	var f PortsFile
	err := readJSON(c, PortsPath, &f)
	return f, err
}

// numbered is a line of a log with its 1-based line number.
type numbered struct {
	N    int
	Text string
}

// maxLineLen keeps one runaway log line from flooding a result.
const maxLineLen = 2000

// readLog returns the lines of a unit log, numbered; a missing log is empty.
func readLog(c *callctx.Ctx, rel string) ([]numbered, bool, error) {
	b, err := c.Files.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	text := strings.TrimSuffix(string(b), "\n")
	if text == "" {
		return nil, true, nil
	}
	raw := strings.Split(text, "\n")
	lines := make([]numbered, len(raw))
	for i, l := range raw {
		l = strings.TrimSuffix(l, "\r")
		if len(l) > maxLineLen {
			l = l[:maxLineLen] + "…"
		}
		lines[i] = numbered{N: i + 1, Text: l}
	}
	return lines, true, nil
}

// currentRun returns the lines after the last start marker (all lines when
// there is none).
func currentRun(lines []numbered) []numbered {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i].Text, startMarker) {
			return lines[i+1:]
		}
	}
	return lines
}

func tail(lines []numbered, n int) []numbered {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// stderrTail is the last n lines a unit printed to stderr in its current run.
func stderrTail(c *callctx.Ctx, unit string, n int) []string {
	lines, _, err := readLog(c, ErrLog(unit))
	if err != nil {
		return []string{"(stderr log unreadable: " + tool.Explain(c, err) + ")"}
	}
	t := tail(currentRun(lines), n)
	out := make([]string, len(t))
	for i, l := range t {
		out[i] = l.Text
	}
	return out
}

// knownUnits lists units from units.json and from the stderr logs on disk.
func knownUnits(c *callctx.Ctx) ([]string, error) {
	uf, err := loadUnits(c)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for id := range uf.Units {
		seen[id] = true
	}
	entries, err := c.Files.ReadDir(LogsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".err.log"); ok && e.Type().IsRegular() && callctx.ValidUnit(id) {
			seen[id] = true
		}
	}
	ids := slices.Sorted(maps.Keys(seen))
	return ids, nil
}
