package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	tick := time.NewTicker(quiet / 3)
	defer tick.Stop()
	summarize(out, os.Stdout, tick.C, time.Now)
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
}

// quiet is how long the account may stay silent before a progress line.
const quiet = 30 * time.Second

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
}

type pkgState struct {
	started time.Time
	running map[string]time.Time
	// output of each test (and "" for the package), kept until the test
	// passes: a failed test's lines are printed whole.
	output map[string][]string
	failed []string
}

// missingTool is the phrase testutil.NeedTool skips with.
const missingTool = " not installed; run: "

// summarize reads go test -json from r and writes the account to w; a
// value on tick checks whether a progress line is due.
func summarize(r io.Reader, w io.Writer, tick <-chan time.Time, now func() time.Time) {
	lines := make(chan event)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- parse(sc.Bytes())
		}
	}()
	s := newAccount(w, now)
	for {
		select {
		case e, ok := <-lines:
			if !ok {
				s.finish()
				return
			}
			s.handle(e)
		case <-tick:
			s.progress()
		}
	}
}

// parse decodes one line; one that is not an event (go test wrote
// something else) is passed on as it is.
func parse(line []byte) event {
	var e event
	if json.Unmarshal(line, &e) != nil {
		return event{Action: "raw", Output: string(line) + "\n"}
	}
	return e
}

func newAccount(w io.Writer, now func() time.Time) *account {
	return &account{w: w, now: now, start: now(), last: now(), pkgs: map[string]*pkgState{}, builds: map[string][]string{}}
}

type account struct {
	w           io.Writer
	now         func() time.Time
	start, last time.Time
	pkgs        map[string]*pkgState
	builds      map[string][]string
	skipped     []string
	done        int
}

func (s *account) printf(format string, args ...any) {
	fmt.Fprintf(s.w, format, args...)
	s.last = s.now()
}

func (s *account) pkg(name string) *pkgState {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgState{started: s.now(), running: map[string]time.Time{}, output: map[string][]string{}}
		s.pkgs[name] = p
	}
	return p
}

func (s *account) handle(e event) {
	switch e.Action {
	case "raw":
		s.printf("%s", e.Output)
		return
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		s.printf("%s", strings.Join(s.builds[e.ImportPath], ""))
		delete(s.builds, e.ImportPath)
		return
	}
	p := s.pkg(e.Package)
	switch e.Action {
	case "start":
		p.started = s.now()
	case "run", "cont":
		p.running[e.Test] = s.now()
	case "pause":
		// A paused parallel test waits; it is not what the package is doing.
		delete(p.running, e.Test)
	case "output":
		p.output[e.Test] = append(p.output[e.Test], e.Output)
	case "pass", "skip", "fail":
		if e.Test == "" {
			s.packageDone(e, p)
			return
		}
		delete(p.running, e.Test)
		switch e.Action {
		case "fail":
			p.failed = append(p.failed, e.Test)
			return
		case "skip":
			for _, l := range p.output[e.Test] {
				if strings.Contains(l, missingTool) {
					s.skipped = append(s.skipped, fmt.Sprintf("%s %s: %s", short(e.Package), e.Test, strings.TrimSpace(l)))
					break
				}
			}
		}
		delete(p.output, e.Test)
	}
}

func (s *account) packageDone(e event, p *pkgState) {
	s.done++
	delete(s.pkgs, e.Package)
	switch e.Action {
	case "skip":
		// No test files: go test's "?" line says nothing worth a line here.
		return
	case "pass":
		s.printf("ok    %s\t%.1fs\n", short(e.Package), e.Elapsed)
		return
	}
	var b strings.Builder
	for _, t := range p.failed {
		b.WriteString(strings.Join(p.output[t], ""))
	}
	// Output outside any test: a panic, a failing TestMain, the summary.
	b.WriteString(strings.Join(p.output[""], ""))
	s.printf("%sFAIL  %s\t%.1fs\n", b.String(), short(e.Package), e.Elapsed)
}

// progress prints, after quiet time without a line, what is still running.
func (s *account) progress() {
	now := s.now()
	if now.Sub(s.last) < quiet {
		return
	}
	if len(s.pkgs) == 0 {
		s.printf("… %s: compiling the test binaries (%d packages done; the first run compiles every package with -race)\n", secs(now.Sub(s.start)), s.done)
		return
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.pkgs)) {
		p := s.pkgs[name]
		type run struct {
			name string
			dur  time.Duration
		}
		var runs []run
		for t, at := range p.running {
			// A parent whose subtests run says less than they do.
			if !hasChild(p.running, t) {
				runs = append(runs, run{t, now.Sub(at)})
			}
		}
		slices.SortFunc(runs, func(a, b run) int {
			if a.dur != b.dur {
				return int(b.dur - a.dur)
			}
			return strings.Compare(a.name, b.name)
		})
		var names []string
		for i, r := range runs {
			if i == 3 {
				names = append(names, fmt.Sprintf("%d more", len(runs)-3))
				break
			}
			names = append(names, fmt.Sprintf("%s %s", r.name, secs(r.dur)))
		}
		what := "starting"
		if len(names) > 0 {
			what = strings.Join(names, ", ")
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", short(name), what))
	}
	s.printf("… %s: still running: %s\n", secs(now.Sub(s.start)), strings.Join(parts, "; "))
}

func (s *account) finish() {
	if len(s.skipped) == 0 {
		return
	}
	s.printf("skipped because a program they drive is missing (make deps installs them):\n")
	for _, l := range s.skipped {
		s.printf("  %s\n", l)
	}
}

func hasChild(running map[string]time.Time, test string) bool {
	for t := range running {
		if strings.HasPrefix(t, test+"/") {
			return true
		}
	}
	return false
}

func short(pkg string) string { return strings.TrimPrefix(pkg, "github.com/toolhost/toolhost/") }

func secs(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds())) }
