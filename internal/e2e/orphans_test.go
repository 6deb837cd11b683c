package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/policy"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/upstream/upstreamtest"
)

type unitStatus struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	PID      int    `json:"pid"`
	PGID     int    `json:"pgid"`
	Detached bool   `json:"detached"`
	Note     string `json:"note"`
	Error    string `json:"error"`
	Sandbox  *struct {
		Confined bool     `json:"confined"`
		Write    []string `json:"write"`
		Bind     string   `json:"bind"`
	} `json:"sandbox"`
}

type spawnResult struct {
	OK      bool         `json:"ok"`
	Reason  string       `json:"reason"`
	Units   []unitStatus `json:"units"`
	Orphans []unitStatus `json:"orphans"`
}

func spawnUnits(t *testing.T, c *stdioclient.Client, args map[string]any) spawnResult {
	t.Helper()
	var out spawnResult
	testutil.ResultOK(t, "spawn_units", testutil.CallTool(t, c, "spawn_units", args), &out)
	return out
}

func pickPort(t *testing.T, c *stdioclient.Client, unit string) int {
	t.Helper()
	var out struct {
		Ports map[string]int `json:"ports"`
	}
	testutil.ResultOK(t, "port_picker", testutil.CallTool(t, c, "port_picker", map[string]any{"units": []string{unit}}), &out)
	return out.Ports[unit]
}

// probeLines waits for the probe's {"check":"done"} in a unit's stdout log
// and returns its checks by check and target.
func probeLines(t *testing.T, project, unit string) map[string]string {
	t.Helper()
	log := filepath.Join(project, "integration/logs", unit+".out.log")
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if strings.Contains(string(b), `"check":"done"`) {
			out := map[string]string{}
			for _, line := range strings.Split(string(b), "\n") {
				var l struct{ Check, Target, Result string }
				if json.Unmarshal([]byte(line), &l) == nil && l.Check != "" {
					out[l.Check+" "+l.Target] = l.Result
				}
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("unit %s did not finish its checks; log:\n%s", unit, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUnitsAreConfined: a unit started by spawn_units cannot write outside
// the integrator's allow-list (not even its own units/<id>/), cannot bind a
// port other than its own, and cannot signal toolhost.
func TestUnitsAreConfined(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	for _, d := range []string{"units/u", "prd"} {
		if err := os.MkdirAll(filepath.Join(project, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := testutil.Serve(t, "--project-dir", project, "--agent", "integrator", "--session", "sess-units")
	port := pickPort(t, c, "u")
	addr := upstreamtest.FreeAddr(t)
	other, err := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	if err != nil {
		t.Fatal(err)
	}
	own, prd, units, logs := filepath.Join(project, "units/u/own.txt"), filepath.Join(project, "prd/x"),
		filepath.Join(project, ".toolhost/units.json"), filepath.Join(project, "integration/logs/u-ok.txt")
	argv := []string{confineProbe(t), "-write", own, "-write", prd, "-write", units, "-write", logs,
		"-bind", "0", "-bind", strconv.Itoa(other), "-signal", strconv.Itoa(c.Process().PID)}
	res := spawnUnits(t, c, map[string]any{"action": "start", "units": []map[string]any{{"id": "u", "argv": argv}}})
	u := res.Units[0]
	if u.State != "running" || u.Sandbox == nil || !u.Sandbox.Confined || u.Sandbox.Bind != strconv.Itoa(port) {
		t.Fatalf("unit %+v (sandbox %+v), want running, confined, binding only %d", u, u.Sandbox, port)
	}
	got := probeLines(t, project, "u")
	denied := "permission denied"
	for check, want := range map[string]string{
		"write " + own:                            denied,
		"write " + prd:                            denied,
		"write " + units:                          denied,
		"write " + logs:                           "ok",
		"bind " + strconv.Itoa(port):              "ok",
		"bind " + strconv.Itoa(other):             denied,
		"signal " + strconv.Itoa(c.Process().PID): "operation not permitted",
	} {
		if !strings.Contains(got[check], want) {
			t.Errorf("%s: %q, want %q", check, got[check], want)
		}
	}
	for _, p := range []string{own, prd} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the unit wrote %s", p)
		}
	}
	var rec struct {
		Units map[string]any `json:"units"`
	}
	if b, err := os.ReadFile(units); err != nil || json.Unmarshal(b, &rec) != nil || rec.Units["u"] == nil {
		t.Errorf("units.json is no longer toolhost's record: %s (%v)", b, err)
	}
	spawnUnits(t, c, map[string]any{"action": "stop", "units": []map[string]any{{"id": "u"}}})
}

// descendants returns every process below pid, by pid and start time.
func descendants(t *testing.T, pid int) map[procs.Process]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := map[procs.Process]string{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			st, err := procs.ReadStat(c)
			if err != nil || st.Dead() {
				continue
			}
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline")
			out[procs.Process{PID: c, StartTicks: st.StartTicks}] = strings.ReplaceAll(string(cmdline), "\x00", " ")
			queue = append(queue, c)
		}
	}
	return out
}

// TestSIGKILLLeavesNothing kills `toolhost serve` with SIGKILL while it
// runs a unit (with a child that ignores SIGTERM), a detached unit, a bash
// command with a background job and an upstream server with a child: within
// 2 s nothing it started is alive (by pid and start time) except the
// detached unit, and the next session says what it found.
func TestSIGKILLLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	for _, d := range []string{"units/srv", "units/keep", "integration/cases"} {
		if err := os.MkdirAll(filepath.Join(project, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agents := writeAgents(t, func(a map[string]any) {
		if a["short"] == "integrator" {
			cli := a["cli"].(map[string]any)
			cli["toolPolicy"] = append(cli["toolPolicy"].([]any), "fake__*")
		}
	})
	policyFile := filepath.Join(dir, "tools.json")
	upstreamtest.WritePolicy(t, policyFile, map[string]policy.Rule{"fake__spawn_child": {Permission: policy.Write}},
		policy.Upstream{Name: "fake", Transport: "stdio", Command: upstreamtest.FakeMCP(t), DiscoveryTimeoutMS: 10000})
	args := []string{"--project-dir", project, "--agent", "integrator", "--agents", agents, "--policy", policyFile}
	c := testutil.Serve(t, args...)
	serve := c.Process().PID

	probe := confineProbe(t)
	res := spawnUnits(t, c, map[string]any{"action": "start", "units": []map[string]any{
		{"id": "srv", "argv": []string{probe, "-fork"}},
		{"id": "keep", "argv": []string{probe}, "detached": true},
	}})
	keep := res.Units[1]
	if !keep.Detached || keep.State != "running" {
		t.Fatalf("keep = %+v, want a running detached unit", keep)
	}
	t.Cleanup(func() { _ = syscall.Kill(-keep.PGID, syscall.SIGKILL) })
	probeLines(t, project, "srv")
	testutil.ListTools(t, c) // a client lists before it calls an upstream tool; the list waits for discovery
	if r := testutil.CallTool(t, c, "fake__spawn_child", map[string]any{}); r.IsError {
		t.Fatalf("fake__spawn_child: %s", r.Text())
	}
	// A bash call still running when toolhost dies, with a background job.
	if _, _, err := c.Dispatch("tools/call", map[string]any{"name": "bash", "arguments": map[string]any{
		"command": `sleep 300 & echo "$TMPDIR" > integration/cases/ready; wait`}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, err := os.ReadFile(filepath.Join(project, "integration/cases/ready")); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bash command did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The background job of the bash command may not have exec'd sleep yet
	// (a forked bash for a moment): look again until every kind is there.
	var started map[procs.Process]string
	var kinds []string
	want := []string{"bash", "holder", "holder", "holder", "sleep", "sleep", "unit", "unit child", "upstream", "warden"}
	for deadline := time.Now().Add(10 * time.Second); ; {
		started, kinds = toolhostKinds(t, serve, keep.PGID)
		if slices.Equal(kinds, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("toolhost's descendants %v (%v), want %v", kinds, started, want)
	}
	if err := syscall.Kill(serve, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		var left []string
		for p, cmd := range started {
			if procs.Alive(p.PID, p.StartTicks) {
				left = append(left, strconv.Itoa(p.PID)+" "+cmd)
			}
		}
		if len(left) == 0 {
			t.Logf("everything gone %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
			break
		}
		if time.Since(killed) > 2*time.Second {
			t.Fatalf("still alive 2 s after SIGKILL of toolhost: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !alivePID(keep.PID) {
		t.Fatal("the detached unit died with toolhost")
	}

	// The next session finds srv recorded as running with its owner gone,
	// says so, and records it; keep is still running, detached. It also
	// removes the private temp dir of the bash command toolhost was running.
	// (Any session starting in this test process may be the one that
	// removes it.)
	ready, _ := os.ReadFile(filepath.Join(project, "integration/cases/ready"))
	tmps := []string{strings.TrimSpace(string(ready))}
	if !strings.Contains(tmps[0], "toolhost-cmd-"+strconv.Itoa(serve)+"-") {
		t.Fatalf("the bash command's TMPDIR %q is not a private temp dir of toolhost %d", tmps[0], serve)
	}
	next := testutil.Serve(t, args...)
	st := spawnUnits(t, next, map[string]any{"action": "status"})
	for _, d := range tmps {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(d); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the next session left %s, the temp dir of a command of the dead toolhost", d)
				break
			}
		}
	}
	if len(st.Orphans) != 1 || st.Orphans[0].ID != "srv" || st.Orphans[0].State != "exited" ||
		!strings.Contains(st.Orphans[0].Note, "toolhost pid "+strconv.Itoa(serve)+", which started the unit, is gone") {
		t.Fatalf("orphans %+v, want srv found exited with its owner gone", st.Orphans)
	}
	for _, u := range st.Units {
		if u.ID == "keep" && (u.State != "running" || !u.Detached) {
			t.Errorf("keep = %+v, want running and detached", u)
		}
		if u.ID == "srv" && u.State != "exited" {
			t.Errorf("srv = %+v, want exited in the record too", u)
		}
	}
	if again := spawnUnits(t, next, map[string]any{"action": "status"}); len(again.Orphans) != 0 {
		t.Errorf("the orphan was reported twice: %+v", again.Orphans)
	}
	// The detached unit can be stopped by the next session.
	stop := spawnUnits(t, next, map[string]any{"action": "stop", "units": []map[string]any{{"id": "keep"}}})
	if stop.Units[0].State != "stopped" || alivePID(keep.PID) {
		t.Fatalf("stop keep = %+v", stop.Units[0])
	}
}

func alivePID(pid int) bool {
	st, err := procs.ReadStat(pid)
	return err == nil && !st.Dead()
}

// toolhostKinds names what each descendant of serve is; the detached unit's
// process group (keep: its holder and its process), which is meant to
// outlive toolhost, is left out.
func toolhostKinds(t *testing.T, serve, keep int) (map[procs.Process]string, []string) {
	t.Helper()
	started := descendants(t, serve)
	var kinds []string
	for p, cmd := range started {
		if st, err := procs.ReadStat(p.PID); err == nil && st.PGID == keep {
			delete(started, p)
			continue
		}
		switch {
		case strings.Contains(cmd, "toolhost-warden"):
			kinds = append(kinds, "warden")
		case strings.Contains(cmd, "toolhost-holder"):
			// The holder in front of a confined command (internal/confine):
			// the bash call's, the srv unit's and the upstream's.
			kinds = append(kinds, "holder")
		case strings.Contains(cmd, "fakemcp"):
			kinds = append(kinds, "upstream")
		case strings.HasPrefix(cmd, "sleep 300"):
			kinds = append(kinds, "sleep")
		case strings.Contains(cmd, "confineprobe -ignore-term"):
			kinds = append(kinds, "unit child")
		case strings.Contains(cmd, "confineprobe"):
			kinds = append(kinds, "unit")
		case strings.Contains(cmd, "bash"):
			kinds = append(kinds, "bash")
		}
	}
	slices.Sort(kinds)
	return started, kinds
}
