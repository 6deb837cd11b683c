package integrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/confine"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// UnitInput is one unit of a spawn_units call.
type UnitInput struct {
	ID       string            `json:"id" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"unit id: names units/<id>/, the logs integration/logs/<id>.*.log and the record in .toolhost/units.json"`
	Argv     []string          `json:"argv,omitempty" jsonschema:"minItems=1,maxItems=256" jsonschema_description:"start only (required there): the program and its arguments, run directly without a shell; argv[0] is a program on PATH or a path relative to the unit's cwd"`
	Cwd      string            `json:"cwd,omitempty" jsonschema:"maxLength=1024" jsonschema_description:"start only: working directory relative to the project dir (default units/<id>); it must exist and stay inside the project"`
	Env      map[string]string `json:"env,omitempty" jsonschema_description:"start only: extra environment variables; the unit gets only PATH, HOME, LANG and TZ from toolhost, these, and PORT"`
	Port     int               `json:"port,omitempty" jsonschema:"minimum=1,maximum=65535" jsonschema_description:"start only: port passed as PORT (default: the unit's reservation from port_picker; PORT in env is used only when neither exists); by default the unit may listen on this port only"`
	Detached bool              `json:"detached,omitempty" jsonschema_description:"start only: let the unit outlive this toolhost session (it is not stopped when toolhost exits or dies); stop it with spawn_units stop"`
}

// SpawnUnitsInput is the spawn_units request.
type SpawnUnitsInput struct {
	Action string      `json:"action" jsonschema:"enum=start,enum=stop,enum=status" jsonschema_description:"start the units, stop them (whole process group: SIGTERM, 3 s, SIGKILL) or report their status"`
	Units  []UnitInput `json:"units,omitempty" jsonschema:"maxItems=50" jsonschema_description:"the units; for stop and status only id is read, and leaving the list out means every unit in .toolhost/units.json"`
}

// UnitStatus is one unit in a spawn_units result.
type UnitStatus struct {
	ID string `json:"id" jsonschema_description:"unit id"`
	// State: running, exited, stopped, not_started or failed.
	State     string            `json:"state" jsonschema:"enum=running,enum=exited,enum=stopped,enum=not_started,enum=failed" jsonschema_description:"running; exited by itself; stopped on request; not_started (no record); failed (could not be started or stopped, see error)"`
	PID       int               `json:"pid,omitempty" jsonschema_description:"pid of the unit's leader process"`
	PGID      int               `json:"pgid,omitempty" jsonschema_description:"process group of the unit"`
	StartedAt *time.Time        `json:"started_at,omitempty" jsonschema_description:"when the unit was started"`
	ExitCode  *int              `json:"exit_code,omitempty" jsonschema_description:"exit code of the leader when known (-1: ended by a signal)"`
	Signal    string            `json:"signal,omitempty" jsonschema_description:"signal that ended the leader, if any"`
	Port      int               `json:"port,omitempty" jsonschema_description:"the PORT the unit was given"`
	Foreign   bool              `json:"foreign,omitempty" jsonschema_description:"true when another toolhost process started the unit"`
	Detached  bool              `json:"detached,omitempty" jsonschema_description:"true when the unit was started to outlive the session that started it"`
	OwnerPID  int               `json:"owner_pid,omitempty" jsonschema_description:"pid of the toolhost process that started the unit"`
	StdoutLog string            `json:"stdout_log,omitempty" jsonschema_description:"project-relative stdout log"`
	StderrLog string            `json:"stderr_log,omitempty" jsonschema_description:"project-relative stderr log"`
	Stop      *procs.StopReport `json:"stop,omitempty" jsonschema_description:"how the group was stopped: the strongest signal sent, the member pids, the pids that needed SIGKILL"`
	Sandbox   *confine.Report   `json:"sandbox,omitempty" jsonschema_description:"how the kernel confines the unit: where it may write (the integrator's allow-list), which ports it may bind"`
	Note      string            `json:"note,omitempty" jsonschema_description:"extra facts, e.g. why an exit code is unknown"`
	Error     string            `json:"error,omitempty" jsonschema_description:"what went wrong for this unit and what to change"`
}

// SpawnUnitsOutput is the spawn_units result.
type SpawnUnitsOutput struct {
	tool.Status
	Units []UnitStatus `json:"units" jsonschema_description:"one entry per unit, in request order"`
	// Orphans are found on every call, whatever the action.
	Orphans []UnitStatus `json:"orphans,omitempty" jsonschema_description:"units recorded as running whose toolhost (not detached) is gone: this call stopped what was left of them"`
	// sandbox is how the started units are confined, for the audit row.
	sandbox string
}

// AuditSandbox implements tool.Confined.
func (o SpawnUnitsOutput) AuditSandbox() string { return o.sandbox }

// SpawnUnits is the spawn_units tool.
func SpawnUnits() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "spawn_units",
		Title: "Start, stop or inspect units",
		Description: "start: run each unit's argv (no shell) in its own process group, in units/<id>/ (or cwd), with a minimal " +
			"environment plus env and PORT; stdout/stderr are appended to integration/logs/<id>.out.log|.err.log and the pid, " +
			"process group and start time are recorded in .toolhost/units.json. stop: SIGTERM the whole group, wait 3 s, " +
			"SIGKILL what is left; no process of the group survives. status: running or exited with exit code, also for units " +
			"another toolhost process started. The kernel (Landlock) confines every unit: it writes only where the integrator's allow-list allows " +
			"(never toolhost's own stores) and in its private $TMPDIR, listens only on its own port, and cannot signal processes outside itself. " +
			"Units are stopped when toolhost exits or dies, unless started with detached: true; units whose toolhost died are stopped by the next call and listed under orphans.",
		Effect:   tool.Destructive,
		Commands: unitCommands,
	}, spawnUnits)
}

// unitCommands are the argvs a start would run, for the engine's Bash
// guard: an argv that runs sh -c "…" is a shell command like any other.
func unitCommands(args json.RawMessage) []tool.Command {
	var in SpawnUnitsInput
	if json.Unmarshal(args, &in) != nil || in.Action != "start" {
		return nil
	}
	var out []tool.Command
	for i, u := range in.Units {
		if len(u.Argv) > 0 {
			dir := u.Cwd
			if dir == "" {
				dir = "units/" + u.ID
			}
			out = append(out, tool.Command{Argv: u.Argv, Env: u.Env, Dir: dir, Where: fmt.Sprintf("units[%d].argv", i)})
		}
	}
	return out
}

func spawnUnits(ctx context.Context, c *callctx.Ctx, in SpawnUnitsInput) (SpawnUnitsOutput, error) {
	if c.Procs == nil {
		return SpawnUnitsOutput{}, errors.New("this session has no process owner")
	}
	orphans, err := sweepOrphans(ctx, c)
	if err != nil {
		return SpawnUnitsOutput{}, err
	}
	var out SpawnUnitsOutput
	switch in.Action {
	case "start":
		out, err = startUnits(ctx, c, in.Units)
	case "stop":
		out, err = stopUnits(ctx, c, in.Units)
	default:
		out, err = unitStatuses(c, in.Units)
	}
	if err != nil {
		return out, err
	}
	var failed []string
	for _, u := range out.Units {
		if u.Error != "" {
			failed = append(failed, u.ID+": "+u.Error)
		}
	}
	if out.Units == nil {
		out.Units = []UnitStatus{}
	}
	out.Orphans = orphans
	if len(failed) > 0 {
		out.Reason = strings.Join(failed, "; ")
	}
	// A request refused as a whole (no units, a unit listed twice) has a
	// reason and no unit errors; it did not do what was asked either.
	out.OK = out.Reason == ""
	return out, nil
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

func startUnits(ctx context.Context, c *callctx.Ctx, units []UnitInput) (SpawnUnitsOutput, error) {
	if len(units) == 0 {
		return SpawnUnitsOutput{Status: tool.Status{Reason: "units is empty; list the units to start, each with id and argv"}}, nil
	}
	if id := duplicateID(units); id != "" {
		return SpawnUnitsOutput{Status: tool.Status{Reason: fmt.Sprintf("unit %s is listed twice; list each unit once", id)}}, nil
	}
	out := SpawnUnitsOutput{}
	for i, u := range units {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		st, err := startUnit(c, i, u)
		if err != nil {
			return out, err
		}
		out.Units = append(out.Units, st)
		if st.Sandbox != nil {
			out.sandbox = strings.TrimPrefix(out.sandbox+"; ", "; ") + "unit " + u.ID + ": " + st.Sandbox.String()
		}
		msg := fmt.Sprintf("unit %s: %s", u.ID, st.State)
		if st.PID != 0 {
			msg += fmt.Sprintf(" (pid %d)", st.PID)
		}
		c.Progress(float64(i+1), float64(len(units)), msg)
	}
	return out, nil
}

func duplicateID(units []UnitInput) string {
	seen := map[string]bool{}
	for _, u := range units {
		if seen[u.ID] {
			return u.ID
		}
		seen[u.ID] = true
	}
	return ""
}

// startError is a unit that could not start for a reason the caller can
// fix: msg in the tool's words and, like tool.Fail, the error behind it
// (nil when msg says it all), which the unit's error gives as
// tool.Explain words it.
type startError struct {
	msg string
	err error
}

func (e *startError) Error() string { return e.msg }

func failStart(err error, format string, args ...any) error {
	return &startError{msg: fmt.Sprintf(format, args...), err: err}
}

// startUnit starts one unit; a problem the model can fix becomes the unit's
// error, a system failure is returned.
func startUnit(c *callctx.Ctx, i int, u UnitInput) (UnitStatus, error) {
	st := UnitStatus{ID: u.ID, State: "failed", StdoutLog: OutLog(u.ID), StderrLog: ErrLog(u.ID)}
	spec, rel, port, err := prepareStart(c, i, u)
	if err == nil {
		var rec *UnitRecord
		rec, err = launch(c, u, spec, rel, port)
		if err == nil {
			st = recordStatus(rec, false)
		}
	}
	var se *startError
	switch {
	case err == nil:
		return st, nil
	case errors.As(err, &se):
		st.Error = se.msg
		if se.err != nil {
			st.Error += ": " + tool.Explain(c, se.err)
		}
		return st, nil
	}
	return st, err
}

// prepareStart checks a start request and builds the process spec (without
// log files).
func prepareStart(c *callctx.Ctx, i int, u UnitInput) (procs.UnitSpec, string, int, error) {
	field := fmt.Sprintf("units[%d]", i)
	if len(u.Argv) == 0 {
		return procs.UnitSpec{}, "", 0, failStart(nil, "%s.argv is required for start: give the program and its arguments, e.g. [\"node\", \"server.js\"]", field)
	}
	dir, rel, err := unitCwd(c, u)
	if err != nil {
		return procs.UnitSpec{}, "", 0, err
	}
	env, err := unitEnv(field, u)
	if err != nil {
		return procs.UnitSpec{}, "", 0, err
	}
	pf, err := loadPorts(c)
	if err != nil {
		return procs.UnitSpec{}, "", 0, err
	}
	port := u.Port
	if port == 0 {
		port = pf.Reservations[u.ID].Port
	}
	if port != 0 {
		if holder := pf.holder(c, u.ID, port, c.Clock.Now()); holder != "" {
			return procs.UnitSpec{}, "", 0, failStart(nil, "port %d is reserved by unit %s; call port_picker for %s or pass another port", port, holder, u.ID)
		}
		env = setEnv(env, "PORT", strconv.Itoa(port))
	}
	searchPath, ok := envValue(env, "PATH")
	if !ok {
		searchPath = os.Getenv("PATH")
	}
	prog, err := lookProgram(u.Argv[0], dir, searchPath)
	if err != nil {
		return procs.UnitSpec{}, "", 0, failStart(err, "%s.argv[0]", field)
	}
	argv := append([]string{prog}, u.Argv[1:]...)
	return procs.UnitSpec{Unit: u.ID, Argv: argv, Dir: dir, Env: env, Detached: u.Detached}, rel, port, nil
}

// unitCwd resolves the unit's working directory inside the project.
func unitCwd(c *callctx.Ctx, u UnitInput) (string, string, error) {
	rel := u.Cwd
	if rel == "" {
		rel = "units/" + u.ID
	}
	if strings.ContainsRune(rel, 0) || filepath.IsAbs(rel) || path.IsAbs(filepath.ToSlash(rel)) {
		return "", "", failStart(nil, "cwd %q must be a path relative to the project dir", rel)
	}
	clean := path.Clean(filepath.ToSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", "", failStart(nil, "cwd %q leaves the project dir; give a directory inside it", rel)
	}
	real, err := c.Files.RealDir(clean)
	var se *sandbox.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", failStart(nil, "cwd %s does not exist; create the unit's directory (default units/%s) or pass an existing cwd", clean, u.ID)
	case errors.As(err, &se):
		return "", "", failStart(nil, "cwd %s cannot be the unit's directory: %s; give a directory inside the project", clean, se.Detail)
	case err != nil:
		return "", "", err
	}
	return real, clean, nil
}

// unitEnv checks the unit's own variables and returns them (K=V); the
// confinement adds what passes from toolhost's environment (PATH, HOME,
// LANG, TZ and the agent's sandbox.env: confine.KindUnit).
func unitEnv(field string, u UnitInput) ([]string, error) {
	var env []string
	keys := slices.Sorted(maps.Keys(u.Env))
	for _, k := range keys {
		v := u.Env[k]
		if !envName().MatchString(k) {
			return nil, failStart(nil, "%s.env: %q is not a valid variable name (letters, digits, _; not starting with a digit)", field, k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, failStart(nil, "%s.env.%s: the value holds a NUL byte", field, k)
		}
		env = setEnv(env, k, v)
	}
	return env, nil
}

func setEnv(env []string, k, v string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

func envValue(env []string, k string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// lookProgram resolves argv[0] the way the child's PATH would, relative
// names against the unit's cwd. Relative PATH entries are skipped.
func lookProgram(name, dir, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if problem := executable(p); problem != "" {
			return "", fault.Safef("%s: %s", name, problem)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if executable(p) == "" {
			return p, nil
		}
	}
	return "", fault.Safef("%q not found on PATH (%s); give an absolute path or one relative to the unit's cwd", name, pathEnv)
}

// executable says what keeps p from being run ("" when nothing does).
func executable(p string) string {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "no such file"
	case fi.IsDir():
		return "is a directory"
	case fi.Mode()&0o111 == 0:
		return "not executable"
	}
	return ""
}

// appendOpener is the sandbox's way to hand a log file to a child process.
type appendOpener interface {
	OpenAppend(rel string) (*os.File, error)
}

// launch starts the unit under the units.json lock, so two toolhost
// processes never start the same unit twice, and records it.
func launch(c *callctx.Ctx, u UnitInput, spec procs.UnitSpec, rel string, port int) (*UnitRecord, error) {
	opener, ok := c.Files.(appendOpener)
	if !ok {
		return nil, errors.New("the session's file door cannot open log files for a child process")
	}
	var rec *UnitRecord
	err := sandbox.UpdateJSON(c.Shared, UnitsPath, func(uf *UnitsFile, _ bool) error {
		if uf.Units == nil {
			uf.Units = map[string]*UnitRecord{}
		}
		if old := uf.Units[u.ID]; old != nil && c.Procs.Alive(procs.Process{PID: old.PID, StartTicks: old.StartTicks}) {
			return failStart(nil, "unit %s is already running (pid %d, started by toolhost pid %d); stop it first", u.ID, old.PID, old.OwnerPID)
		}
		now := c.Clock.Now()
		marker := fmt.Sprintf("%s%s at %s: %s ===\n", startMarker, u.ID, now.Format(time.RFC3339), strings.Join(u.Argv, " "))
		var err error
		if spec.Stdout, err = openLog(c, opener, OutLog(u.ID), marker); err != nil {
			return err
		}
		if spec.Stderr, err = openLog(c, opener, ErrLog(u.ID), marker); err != nil {
			_ = spec.Stdout.File.Close()
			return err
		}
		plan, err := confineUnit(c, u, port, spec.Env)
		if err != nil {
			_ = spec.Stdout.File.Close()
			_ = spec.Stderr.File.Close()
			return err
		}
		defer plan.Close()
		cmd := plan.Command(spec.Unit, spec.Argv, spec.Dir)
		spec.Env, spec.Confine = cmd.Env, cmd.Confine
		spec.OnExit = func(p *procs.Proc) {
			recordExit(c, p)
			plan.RemoveTempDir()
		}
		p, err := c.Procs.Start(spec)
		if err != nil {
			_ = spec.Stdout.File.Close()
			_ = spec.Stderr.File.Close()
			plan.RemoveTempDir()
			return failStart(err, "could not start %s", u.Argv[0])
		}
		self := c.Procs.Self()
		report := plan.Report()
		rec = &UnitRecord{
			ID: u.ID, Argv: u.Argv, Cwd: rel, PID: p.PID, PGID: p.PGID, StartTicks: p.StartTicks,
			StartedAt: p.StartedAt, Port: port, OwnerPID: self.PID, OwnerStartTicks: self.StartTicks, SessionID: c.SessionID,
			Detached: u.Detached, Sandbox: &report, TempDir: plan.TempDir,
			State: "running", StdoutLog: OutLog(u.ID), StderrLog: ErrLog(u.ID),
		}
		uf.Units[u.ID] = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	if port != 0 {
		if err := bindPort(c, u.ID, port, rec.PID, rec.StartTicks); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// openLog opens a unit log for the child and writes the start marker.
func openLog(c *callctx.Ctx, opener appendOpener, rel, marker string) (procs.Log, error) {
	f, err := opener.OpenAppend(rel)
	if err != nil {
		return procs.Log{}, err
	}
	if _, err := f.WriteString(marker); err != nil {
		_ = f.Close()
		return procs.Log{}, err
	}
	return procs.Log{File: f, Cap: LogCap, Backup: func(b []byte) error { return c.Files.WriteFile(rel+".1", b) }}, nil
}

// recordExit stores how a unit this session started ended; a requested stop
// also releases its port.
func recordExit(c *callctx.Ctx, p *procs.Proc) {
	_, code, sig := p.Exit()
	state := "exited"
	if p.Stopped() {
		state = "stopped"
	}
	now := c.Clock.Now()
	err := sandbox.UpdateJSON(c.Shared, UnitsPath, func(uf *UnitsFile, _ bool) error {
		rec := uf.Units[p.Unit]
		if rec == nil || rec.PID != p.PID || rec.StartTicks != p.StartTicks {
			return sandbox.ErrUnchanged
		}
		rec.State, rec.Signal, rec.ExitedAt = state, sig, &now
		rec.ExitCode = &code
		return nil
	})
	if err == nil && p.Stopped() {
		err = releasePort(c, p.Unit, p.PID)
	}
	if err != nil {
		c.Log.Error().Err(err).Str("unit", p.Unit).Msg("record unit exit")
	}
}

// recordStatus turns a record into a status as its owner recorded it.
func recordStatus(rec *UnitRecord, foreign bool) UnitStatus {
	started := rec.StartedAt
	return UnitStatus{
		ID: rec.ID, State: rec.State, PID: rec.PID, PGID: rec.PGID, StartedAt: &started, ExitCode: rec.ExitCode,
		Signal: rec.Signal, Port: rec.Port, Foreign: foreign, Detached: rec.Detached, OwnerPID: rec.OwnerPID,
		StdoutLog: rec.StdoutLog, StderrLog: rec.StderrLog, Sandbox: rec.Sandbox,
	}
}

// liveStatus is the unit's status now: this session's process owner knows
// its own units exactly; for others the record is checked against /proc by
// pid and start time.
func liveStatus(c *callctx.Ctx, id string, rec *UnitRecord) UnitStatus {
	if p, ok := c.Procs.Get(id); ok && (rec == nil || rec.PID == p.PID) {
		st := UnitStatus{ID: id, State: "running", PID: p.PID, PGID: p.PGID, OwnerPID: c.Procs.Self().PID,
			Detached: p.Detached, StdoutLog: OutLog(id), StderrLog: ErrLog(id)}
		started := p.StartedAt
		st.StartedAt = &started
		if rec != nil {
			st.Port, st.Sandbox = rec.Port, rec.Sandbox
		}
		if !c.Procs.Alive(procs.Process{PID: p.PID, StartTicks: p.StartTicks}) {
			// Dead but not reaped yet (e.g. stopped by another process):
			// the exit status is a moment away.
			select {
			case <-p.Done():
			case <-time.After(time.Second):
			}
		}
		if exited, code, sig := p.Exit(); exited {
			st.State, st.ExitCode, st.Signal = "exited", &code, sig
			if p.Stopped() {
				st.State = "stopped"
			}
		}
		return st
	}
	if rec == nil {
		return UnitStatus{ID: id, State: "not_started", Note: "no record in " + UnitsPath}
	}
	st := recordStatus(rec, true)
	switch {
	case c.Procs.Alive(procs.Process{PID: rec.PID, StartTicks: rec.StartTicks}):
		st.State, st.ExitCode, st.Signal = "running", nil, ""
	case rec.State == "running":
		st.State = "exited"
		st.Note = fmt.Sprintf("exit code unknown: the unit was started by toolhost pid %d, which did not record how it ended", rec.OwnerPID)
	}
	return st
}

func unitStatuses(c *callctx.Ctx, units []UnitInput) (SpawnUnitsOutput, error) {
	uf, err := loadUnits(c)
	if err != nil {
		return SpawnUnitsOutput{}, err
	}
	out := SpawnUnitsOutput{}
	for _, id := range requestedIDs(uf, units) {
		out.Units = append(out.Units, liveStatus(c, id, uf.Units[id]))
	}
	return out, nil
}

// requestedIDs are the ids asked for, or every recorded unit.
func requestedIDs(uf UnitsFile, units []UnitInput) []string {
	if len(units) == 0 {
		return slices.Sorted(maps.Keys(uf.Units))
	}
	ids := make([]string, len(units))
	for i, u := range units {
		ids[i] = u.ID
	}
	return ids
}

func stopUnits(ctx context.Context, c *callctx.Ctx, units []UnitInput) (SpawnUnitsOutput, error) {
	uf, err := loadUnits(c)
	if err != nil {
		return SpawnUnitsOutput{}, err
	}
	// Units stop in parallel: each may take the whole grace period.
	ids := requestedIDs(uf, units)
	out := SpawnUnitsOutput{Units: make([]UnitStatus, len(ids))}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { out.Units[i], errs[i] = stopUnit(ctx, c, id, uf.Units[id]) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func stopUnit(ctx context.Context, c *callctx.Ctx, id string, rec *UnitRecord) (UnitStatus, error) {
	if p, ok := c.Procs.Get(id); ok && (rec == nil || rec.PID == p.PID) {
		rep, err := c.Procs.Stop(ctx, id)
		st := liveStatus(c, id, rec)
		st.Stop = &rep
		if err != nil {
			st.State, st.Error = "failed", tool.Explain(c, err)
			return st, nil
		}
		// recordExit releases the port of a unit stopped on request; one
		// that had exited by itself before the stop is released here.
		return st, releasePort(c, id, p.PID)
	}
	if rec == nil {
		return UnitStatus{ID: id, State: "not_started", Error: fmt.Sprintf("unit %s has no record in %s; check the id (spawn_units status lists the units)", id, UnitsPath)}, nil
	}
	alive, err := c.Procs.GroupAlive(rec.group())
	if err != nil {
		return UnitStatus{}, err
	}
	if !alive {
		return liveStatus(c, id, rec), nil
	}
	// Started by another toolhost process: stop its group after confirming
	// the leader's identity (StopGroup refuses a reused group id).
	rep, err := c.Procs.StopGroup(ctx, rec.group(), procs.DefaultGrace)
	if errors.Is(err, procs.ErrForeignGroup) {
		st := liveStatus(c, id, rec)
		st.Note = strings.TrimPrefix(st.Note+"; ", "; ") + "nothing stopped: its recorded process group id now belongs to another process"
		return st, nil
	}
	st := recordStatus(rec, true)
	st.Stop = &rep
	if err != nil {
		st.State, st.Error = "failed", tool.Explain(c, err)
		return st, nil
	}
	now := c.Clock.Now()
	st.State, st.ExitCode, st.Signal = "stopped", nil, ""
	st.Note = fmt.Sprintf("exit code unknown: the unit was started by toolhost pid %d, so this process cannot read its exit status", rec.OwnerPID)
	err = sandbox.UpdateJSON(c.Shared, UnitsPath, func(uf *UnitsFile, _ bool) error {
		r := uf.Units[id]
		if r == nil || r.PID != rec.PID || r.StartTicks != rec.StartTicks {
			return sandbox.ErrUnchanged
		}
		r.State, r.ExitedAt, r.ExitCode, r.Signal = "stopped", &now, nil, ""
		return nil
	})
	if err == nil {
		err = releasePort(c, id, rec.PID)
	}
	confine.RemoveTempDir(rec.TempDir)
	return st, err
}

// confineUnit prepares a unit's confinement: the session agent's sandbox,
// binding only its own port by default, and a private temp dir. A refusal
// is the unit's start error.
func confineUnit(c *callctx.Ctx, u UnitInput, port int, env []string) (*confine.Plan, error) {
	owner := c.Procs.Self()
	if u.Detached {
		owner = procs.Process{}
	}
	plan, err := confine.Prepare(confine.Request{
		Agent: c.AgentName, Sandbox: c.Settings.Sandbox, ProjectDir: c.Files.ProjectDir(),
		Unit: u.ID, Port: port, TempFor: &owner, Mkdir: c.Files.MkdirAll,
		Kind: confine.KindUnit, SetEnv: env,
	})
	var ue *confine.UnavailableError
	if errors.As(err, &ue) {
		return nil, failStart(ue, "unit %s cannot start", u.ID)
	}
	return plan, err
}

// sweepOrphans stops the units recorded as running whose toolhost is gone
// (not detached ones, which are meant to outlive it) and records it, so no
// unit stays foreign forever; it returns what it found.
func sweepOrphans(ctx context.Context, c *callctx.Ctx) ([]UnitStatus, error) {
	uf, err := loadUnits(c)
	if err != nil {
		return nil, err
	}
	self := c.Procs.Self()
	var found []UnitStatus
	for _, id := range slices.Sorted(maps.Keys(uf.Units)) {
		rec := uf.Units[id]
		owner := procs.Process{PID: rec.OwnerPID, StartTicks: rec.OwnerStartTicks}
		if rec.State != "running" || rec.Detached || rec.OwnerStartTicks == 0 || owner == self || c.Procs.Alive(owner) {
			continue
		}
		st := recordStatus(rec, true)
		alive, err := c.Procs.GroupAlive(rec.group())
		if err != nil {
			return nil, err
		}
		state := "exited"
		st.Note = fmt.Sprintf("toolhost pid %d, which started the unit, is gone, and so is the unit (stopped when its owner died); exit code unknown", rec.OwnerPID)
		if alive {
			rep, err := c.Procs.StopGroup(ctx, rec.group(), procs.DefaultGrace)
			st.Stop = &rep
			if err != nil && !errors.Is(err, procs.ErrForeignGroup) {
				st.State, st.Error = "failed", tool.Explain(c, err)
				found = append(found, st)
				continue
			}
			state = "stopped"
			st.Note = fmt.Sprintf("orphan: toolhost pid %d, which started the unit, is gone; this call stopped what was left of it", rec.OwnerPID)
		}
		st.State, st.ExitCode, st.Signal = state, nil, ""
		now := c.Clock.Now()
		err = sandbox.UpdateJSON(c.Shared, UnitsPath, func(uf *UnitsFile, _ bool) error {
			r := uf.Units[id]
			if r == nil || r.PID != rec.PID || r.StartTicks != rec.StartTicks || r.State != "running" {
				return sandbox.ErrUnchanged
			}
			r.State, r.ExitedAt = state, &now
			return nil
		})
		if err == nil {
			err = releasePort(c, id, rec.PID)
		}
		if err != nil {
			return nil, err
		}
		confine.RemoveTempDir(rec.TempDir)
		found = append(found, st)
	}
	return found, nil
}
