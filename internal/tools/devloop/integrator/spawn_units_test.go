package integrator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/procs"
)

func start(t *testing.T, e *env, units ...UnitInput) SpawnUnitsOutput {
	t.Helper()
	out, err := spawnUnits(context.Background(), e.c, SpawnUnitsInput{Action: "start", Units: units})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func unitState(t *testing.T, e *env, action, id string) UnitStatus {
	t.Helper()
	out, err := spawnUnits(context.Background(), e.c, SpawnUnitsInput{Action: action, Units: []UnitInput{{ID: id}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Units) != 1 {
		t.Fatalf("%s %s: %+v", action, id, out)
	}
	return out.Units[0]
}

func TestTwoUnitsOnPickedPortsAnswerHealth(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	e := newEnv(t)
	e.unitDir(t, "api")
	e.unitDir(t, "web")
	ports, err := portPicker(context.Background(), e.c, PortPickerInput{Units: []string{"api", "web"}})
	if err != nil || !ports.OK {
		t.Fatal(ports, err)
	}
	out := start(t, e,
		UnitInput{ID: "api", Argv: []string{bin, "-mode", "healthy"}},
		UnitInput{ID: "web", Argv: []string{bin, "-mode", "slow", "-delay", "400ms"}})
	if !out.OK || out.Units[0].State != "running" || out.Units[1].State != "running" {
		t.Fatalf("start = %+v", out)
	}
	if out.Units[0].Port != ports.Ports["api"] || out.Units[1].Port != ports.Ports["web"] {
		t.Fatalf("units got ports %d/%d, want the reservations %v", out.Units[0].Port, out.Units[1].Port, ports.Ports)
	}
	if e.progress.count() != 2 {
		t.Fatalf("start reported progress %d times, want once per unit", e.progress.count())
	}
	// The ports port_picker reserved, through the placeholders.
	hw, err := wait(t, context.Background(), e, map[string]any{"targets": []any{
		target("api", "http://127.0.0.1:{{port:api}}/health"), target("web", "http://localhost:{{port:web}}/health"),
	}, "timeout_ms": 20000, "interval_ms": 50})
	if err != nil || !hw.OK {
		t.Fatalf("health_wait = %+v, %v", hw, err)
	}
	for _, r := range hw.Targets {
		if !r.Ready || r.Status != 200 || r.Attempts < 1 {
			t.Fatalf("target %+v not ready", r)
		}
	}
	var uf UnitsFile
	e.readJSON(t, UnitsPath, &uf)
	api := uf.Units["api"]
	if api == nil || api.State != "running" || api.PGID != api.PID || api.StartTicks == 0 || api.Port != ports.Ports["api"] {
		t.Fatalf("units.json api = %+v", api)
	}
	log, _ := os.ReadFile(filepath.Join(e.dir, OutLog("api")))
	if !strings.Contains(string(log), startMarker+"api") || !strings.Contains(string(log), "listening on 127.0.0.1:") {
		t.Fatalf("stdout log = %q, want the start marker and the unit's own output", log)
	}
	stop, err := spawnUnits(context.Background(), e.c, SpawnUnitsInput{Action: "stop"})
	if err != nil || !stop.OK || len(stop.Units) != 2 {
		t.Fatalf("stop all = %+v, %v", stop, err)
	}
	for _, u := range stop.Units {
		if u.State != "stopped" || u.Stop == nil || u.Stop.Signal != "SIGTERM" {
			t.Fatalf("stopped unit = %+v, want stopped by SIGTERM", u)
		}
		noGroupLeft(t, u.PGID)
	}
	var pf PortsFile
	e.readJSON(t, PortsPath, &pf)
	if len(pf.Reservations) != 0 {
		t.Fatalf("reservations after stop = %+v, want released", pf.Reservations)
	}
	e.readJSON(t, UnitsPath, &uf)
	if uf.Units["api"].State != "stopped" || uf.Units["api"].ExitedAt == nil {
		t.Fatalf("units.json after stop = %+v", uf.Units["api"])
	}
}

func TestStopLeavesNoProcessOfTheGroup(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	e := newEnv(t)
	e.unitDir(t, "stubborn")
	out := start(t, e, UnitInput{ID: "stubborn", Argv: []string{bin, "-mode", "stubborn"}, Port: deadPort(t)})
	if !out.OK {
		t.Fatalf("start = %+v", out)
	}
	pgid := out.Units[0].PGID
	waitGroupSize(t, pgid, 2)
	waitIgnoringTerm(t, e.dir, "stubborn")
	st := unitState(t, e, "stop", "stubborn")
	if st.State != "stopped" || st.Stop == nil || st.Stop.Signal != "SIGKILL" || len(st.Stop.Killed) == 0 {
		t.Fatalf("stop = %+v, want the child that ignores SIGTERM killed", st)
	}
	noGroupLeft(t, pgid)
}

func TestStatusOfUnitsAnotherProcessStarted(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	dir := t.TempDir()
	owner, other := newEnvAt(t, dir), newEnvAt(t, dir)
	owner.unitDir(t, "api")
	if out := start(t, owner, UnitInput{ID: "api", Argv: []string{bin, "-mode", "healthy"}, Port: deadPort(t)}); !out.OK {
		t.Fatalf("start = %+v", out)
	}
	st := unitState(t, other, "status", "api")
	if st.State != "running" || !st.Foreign {
		t.Fatalf("status seen by another session = %+v, want running and foreign", st)
	}
	if out := start(t, other, UnitInput{ID: "api", Argv: []string{bin}}); out.OK || !strings.Contains(out.Units[0].Error, "already running") {
		t.Fatalf("second start from another session = %+v, want already running", out)
	}
	st = unitState(t, other, "stop", "api")
	if st.State != "stopped" || !strings.Contains(st.Note, "exit code unknown") {
		t.Fatalf("stop from another session = %+v", st)
	}
	noGroupLeft(t, st.PGID)
	st = unitState(t, owner, "status", "api")
	if st.State != "exited" || st.Signal != "SIGTERM" {
		t.Fatalf("status at the owner = %+v", st)
	}
}

// TestStatusByPIDAndStartTime checks records against /proc, for processes
// no session of this test owns.
func TestStatusByPIDAndStartTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, err := procs.ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string, ticks uint64) *UnitRecord {
		return &UnitRecord{ID: id, Argv: []string{"sleep", "1000"}, PID: st.PID, PGID: st.PID, StartTicks: ticks,
			StartedAt: time.Now(), OwnerPID: 1, State: "running", StdoutLog: OutLog(id), StderrLog: ErrLog(id)}
	}
	if err := e.c.Shared.WriteJSON(UnitsPath, UnitsFile{Units: map[string]*UnitRecord{
		"live": rec("live", st.StartTicks), "reused": rec("reused", st.StartTicks-1),
	}}); err != nil {
		t.Fatal(err)
	}
	out, err := spawnUnits(context.Background(), e.c, SpawnUnitsInput{Action: "status"})
	if err != nil || len(out.Units) != 2 {
		t.Fatalf("status = %+v %v", out, err)
	}
	got := map[string]UnitStatus{}
	for _, u := range out.Units {
		got[u.ID] = u
	}
	if got["live"].State != "running" || !got["live"].Foreign {
		t.Fatalf("live = %+v", got["live"])
	}
	if got["reused"].State != "exited" || got["reused"].ExitCode != nil || !strings.Contains(got["reused"].Note, "exit code unknown") {
		t.Fatalf("a record whose pid now names another process = %+v, want exited with unknown code", got["reused"])
	}
	// Stopping the record with the wrong start time must not touch the process.
	if s := unitState(t, e, "stop", "reused"); s.State != "exited" {
		t.Fatalf("stop of a stale record = %+v", s)
	}
	if !procs.Alive(st.PID, st.StartTicks) {
		t.Fatal("stopping a stale record killed an unrelated process")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if s := unitState(t, e, "status", "live"); s.State != "exited" || s.ExitCode != nil {
		t.Fatalf("after the process died: %+v, want exited with unknown code", s)
	}
}

func TestSpawnStartRejectsBadUnits(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	e := newEnv(t)
	e.unitDir(t, "ok")
	if err := os.Symlink(t.TempDir(), filepath.Join(e.dir, "units", "outside")); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Shared.WriteJSON(PortsPath, PortsFile{Reservations: map[string]Reservation{"other": {Port: 4321, ReservedAt: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		unit UnitInput
		want string
	}{
		{"no argv", UnitInput{ID: "ok"}, "argv is required"},
		{"unit dir missing", UnitInput{ID: "ghost", Argv: []string{bin}}, "does not exist"},
		{"cwd leaves the project", UnitInput{ID: "ok", Argv: []string{bin}, Cwd: "../.."}, "leaves the project"},
		{"absolute cwd", UnitInput{ID: "ok", Argv: []string{bin}, Cwd: "/tmp"}, "relative to the project"},
		{"cwd symlink out of the project", UnitInput{ID: "outside", Argv: []string{bin}}, "outside the project"},
		{"bad env name", UnitInput{ID: "ok", Argv: []string{bin}, Env: map[string]string{"A-B": "1"}}, "not a valid variable name"},
		{"program not on PATH", UnitInput{ID: "ok", Argv: []string{"no-such-program-xyz"}}, "not found on PATH"},
		{"relative program missing", UnitInput{ID: "ok", Argv: []string{"./server"}}, "no such file"},
		{"port another unit holds", UnitInput{ID: "ok", Argv: []string{bin}, Port: 4321}, "port 4321 is reserved by unit other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := start(t, e, tt.unit)
			if out.OK || out.Units[0].State != "failed" || !strings.Contains(out.Units[0].Error, tt.want) {
				t.Fatalf("start = %+v, want failed with %q", out, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		units []UnitInput
		want  string
	}{
		{"no units", nil, "units is empty"},
		{"a unit listed twice", []UnitInput{{ID: "ok", Argv: []string{bin}}, {ID: "ok", Argv: []string{bin}}}, "listed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := start(t, e, tt.units...)
			if out.OK || !strings.Contains(out.Reason, tt.want) || len(out.Units) != 0 {
				t.Fatalf("start = %+v, want ok:false with %q and no units", out, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.dir, UnitsPath)); !os.IsNotExist(err) {
		t.Fatalf("failed starts wrote %s (%v)", UnitsPath, err)
	}
}

// TestUnitEnvironmentIsMinimal is not parallel: it sets variables in the
// test process's environment.
func TestUnitEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("TOOLHOST_TEST_SECRET", "s3cret")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	e := newEnv(t)
	e.unitDir(t, "envdump")
	out := start(t, e, UnitInput{ID: "envdump", Argv: []string{"env"}, Env: map[string]string{"GREETING": "hi"}, Port: 4321})
	if !out.OK {
		t.Fatalf("start = %+v", out)
	}
	p, _ := e.procs.Get("envdump")
	<-p.Done()
	b, err := os.ReadFile(filepath.Join(e.dir, OutLog("envdump")))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"GREETING=hi", "PORT=4321", "PATH="} {
		if !strings.Contains(got, want) {
			t.Fatalf("unit env lacks %s:\n%s", want, got)
		}
	}
	for _, leak := range []string{"TOOLHOST_TEST_SECRET", "HTTP_PROXY"} {
		if strings.Contains(got, leak) {
			t.Fatalf("unit env leaks %s:\n%s", leak, got)
		}
	}
	if st := unitState(t, e, "status", "envdump"); st.State != "exited" || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("status of a finished unit = %+v", st)
	}
}

// A unit that crashed before stop keeps "exited" with its own exit code
// (stop must not relabel a crash as a requested stop), and stop still
// releases its port reservation.
func TestStopAfterCrashKeepsExitAndReleasesPort(t *testing.T) {
	t.Parallel()
	bin := unitServer(t)
	e := newEnv(t)
	e.unitDir(t, "api")
	ports, err := portPicker(context.Background(), e.c, PortPickerInput{Units: []string{"api"}})
	if err != nil || !ports.OK {
		t.Fatal(ports, err)
	}
	out := start(t, e, UnitInput{ID: "api", Argv: []string{bin, "-mode", "crash"}})
	if !out.OK {
		t.Fatalf("start = %+v", out)
	}
	p, _ := e.c.Procs.Get("api")
	<-p.Done()
	st := unitState(t, e, "stop", "api")
	if st.State != "exited" || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("stop after a crash = %+v, want state exited with exit code 3", st)
	}
	if st = unitState(t, e, "status", "api"); st.State != "exited" {
		t.Fatalf("status after stop = %+v, want exited", st)
	}
	var pf PortsFile
	e.readJSON(t, PortsPath, &pf)
	if r, ok := pf.Reservations["api"]; ok {
		t.Fatalf("ports.json still reserves %d for api after stop", r.Port)
	}
}
