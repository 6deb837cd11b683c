package procs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The warden is a second process (this same binary, re-executed) that stops
// the process groups toolhost registered with it once toolhost is gone,
// also after SIGKILL or the OOM killer, when no code of toolhost can run.
// It learns of toolhost's death by EOF on its stdin, a pipe whose write end
// only toolhost holds (close-on-exec, so no child inherits it).
//
// One line per change: "+ PGID LEADER_PID LEADER_TICKS" registers a group,
// "- PGID LEADER_PID LEADER_TICKS" forgets it. Identity is checked again
// before each signal (StopGroup), so a stale line never hits a stranger.

// wardenArg, as the first argument, makes this binary the warden (the
// second is the owner's pid). An argument, not an environment variable:
// arguments are not inherited, so no other process can become a warden by
// accident; and it is checked before anything else, because the owner may
// already be gone when the warden starts.
const wardenArg = "toolhost-warden"

// WardenGrace is the SIGTERM-to-SIGKILL grace the warden gives each group:
// everything is gone well within 2 s of toolhost's death.
const WardenGrace = time.Second

func init() {
	// A warden never runs the program it was re-executed from (a test
	// binary would run its tests).
	if len(os.Args) == 3 && os.Args[1] == wardenArg {
		os.Exit(runWarden(os.Args[2], os.Stdin, os.Stderr))
	}
}

// runWarden reads registrations until EOF, then stops every group still
// registered.
func runWarden(owner string, in io.Reader, logw io.Writer) int {
	// The terminal's signals are for toolhost; the warden has work to do
	// after toolhost is gone.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	groups := map[Group]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		op, g, ok := parseWardenLine(sc.Text())
		switch {
		case !ok:
		case op == "+":
			groups[g] = true
		default:
			delete(groups, g)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	enc := json.NewEncoder(logw)
	for g := range groups {
		wg.Go(func() {
			rep, err := StopGroup(context.Background(), g, WardenGrace)
			if len(rep.Members) == 0 && err == nil {
				return
			}
			line := map[string]any{"level": "warn", "event": "warden_stopped", "owner_pid": owner, "pgid": g.PGID,
				"signal": rep.Signal, "members": rep.Members, "killed": rep.Killed,
				"message": fmt.Sprintf("toolhost pid %s is gone; stopped what it left in process group %d", owner, g.PGID)}
			if err != nil {
				line["error"] = err.Error()
			}
			mu.Lock()
			_ = enc.Encode(line)
			mu.Unlock()
		})
	}
	wg.Wait()
	return 0
}

func parseWardenLine(s string) (string, Group, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || (f[0] != "+" && f[0] != "-") {
		return "", Group{}, false
	}
	pgid, err1 := strconv.Atoi(f[1])
	pid, err2 := strconv.Atoi(f[2])
	ticks, err3 := strconv.ParseUint(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || pgid <= 1 {
		return "", Group{}, false
	}
	return f[0], Group{PGID: pgid, LeaderPID: pid, LeaderTicks: ticks}, true
}

// warden is toolhost's side: it starts the warden on the first
// registration and starts a new one (replaying every registration) if the
// old one died.
type warden struct {
	mu     sync.Mutex
	w      *os.File
	pid    int
	groups map[Group]bool
	closed bool
}

func (w *warden) add(g Group)    { w.send("+", g) }
func (w *warden) remove(g Group) { w.send("-", g) }

func (w *warden) send(op string, g Group) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.groups == nil {
		w.groups = map[Group]bool{}
	}
	if op == "+" {
		w.groups[g] = true
	} else {
		delete(w.groups, g)
	}
	line := fmt.Sprintf("%s %d %d %d\n", op, g.PGID, g.LeaderPID, g.LeaderTicks)
	if w.w != nil {
		if _, err := w.w.WriteString(line); err == nil {
			return
		}
		_ = w.w.Close()
		w.w = nil
	}
	// No warden yet, or it died: start one with every live registration.
	if err := w.start(); err != nil {
		return
	}
	var b strings.Builder
	for g := range w.groups {
		fmt.Fprintf(&b, "+ %d %d %d\n", g.PGID, g.LeaderPID, g.LeaderTicks)
	}
	if _, err := w.w.WriteString(b.String()); err != nil {
		_ = w.w.Close()
		w.w = nil
	}
}

// start launches the warden. It is not a child the warden would stop: its
// own process group, no parent-death signal (it must outlive toolhost).
func (w *warden) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		pw.Close()
		return err
	}
	defer null.Close()
	cmd := &exec.Cmd{
		Path: exe, Args: []string{exe, wardenArg, strconv.Itoa(os.Getpid())},
		Stdin: r, Stdout: null, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return err
	}
	go func() { _ = cmd.Wait() }()
	w.w, w.pid = pw, cmd.Process.Pid
	return nil
}

// close ends the warden (EOF); it stops whatever is still registered.
func (w *warden) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.w != nil {
		_ = w.w.Close()
		w.w = nil
	}
}

// PID is the running warden's pid (0 when none runs).
func (w *warden) PID() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w == nil {
		return 0
	}
	return w.pid
}
