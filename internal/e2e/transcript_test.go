package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the output sections of the transcripts")

// A transcript is a txtar archive:
//
//	-- args --    serve flags after --project-dir/--agents (one line)
//	-- input --   lines sent to the server; directives start with '#':
//	              #wait ID [TIMEOUT]  block until the response to ID arrives
//	              #sleep DURATION
//	              #big BYTES          send a line of BYTES bytes (oversized input)
//	-- output --  every message the server wrote, normalised, responses sorted
//	              by id, then notifications in arrival order
//
// The server's stdin is closed after the last input line, and the test
// waits for it to exit 0, so "EOF with a call in flight" is the default.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/transcripts/*.txtar")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	bin := binary(t)
	agents := agentsFile(t)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, bin, agents, file)
		})
	}
}

func section(a *txtar.Archive, name string) string {
	for _, f := range a.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

type received struct {
	mu    sync.Mutex
	lines []string
	byID  map[string]chan struct{}
}

func (r *received) waitFor(id string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.byID[id]
	if !ok {
		ch = make(chan struct{})
		r.byID[id] = ch
	}
	return ch
}

func runTranscript(t *testing.T, bin, agents, file string) {
	a, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	args := append([]string{"serve", "--project-dir", project, "--agents", agents, "--session", "sess-transcript"},
		strings.Fields(section(a, "args"))...)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := &received{byID: map[string]chan struct{}{}}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal([]byte(line), &m)
			got.mu.Lock()
			got.lines = append(got.lines, line)
			if len(m.ID) > 0 {
				id := string(m.ID)
				ch, ok := got.byID[id]
				if !ok {
					ch = make(chan struct{})
					got.byID[id] = ch
				}
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
			got.mu.Unlock()
		}
	}()
	for n, line := range strings.Split(section(a, "input"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			if _, err := io.WriteString(stdin, line+"\n"); err != nil {
				t.Fatalf("input line %d: %v", n+1, err)
			}
			continue
		}
		f := strings.Fields(line)
		switch f[0] {
		case "#wait":
			timeout := 3 * time.Second
			if len(f) > 2 {
				timeout, _ = time.ParseDuration(f[2])
			}
			select {
			case <-got.waitFor(f[1]):
			case <-time.After(timeout):
				t.Fatalf("input line %d: no response to id %s within %v\nstderr:\n%s", n+1, f[1], timeout, stderr.String())
			}
		case "#sleep":
			d, _ := time.ParseDuration(f[1])
			time.Sleep(d)
		case "#big":
			size, _ := strconv.Atoi(f[1])
			big := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"debug_echo","arguments":{"text":"` +
				strings.Repeat("x", size) + `"}}}` + "\n"
			if _, err := io.WriteString(stdin, big); err != nil {
				t.Fatalf("input line %d: %v", n+1, err)
			}
		default:
			t.Fatalf("input line %d: unknown directive %s", n+1, f[0])
		}
	}
	_ = stdin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitErr := make(chan error, 1)
	go func() { <-readDone; waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("server exit: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		t.Fatalf("server did not exit after stdin closed\nstderr:\n%s", stderr.String())
	}
	actual := normalise(got.lines)
	if *update {
		for i := range a.Files {
			if a.Files[i].Name == "output" {
				a.Files[i].Data = []byte(actual)
			}
		}
		if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := section(a, "output"); want != actual {
		t.Errorf("output mismatch (run with -update to accept)\n--- want\n%s--- got\n%s\nstderr:\n%s", want, actual, stderr.String())
	}
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`), "<ULID>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<TS>"},
	{regexp.MustCompile(`(\\?")(duration_ms|elapsed_ms|slept_ms)(\\?"):\s*[0-9.]+`), `${1}${2}${3}:0`},
}

// normalise canonicalises each message (sorted keys), masks volatile values
// and orders responses by id, then notifications in arrival order.
func normalise(lines []string) string {
	type msg struct {
		key  string
		text string
	}
	var resp, notes []msg
	for _, l := range lines {
		for _, v := range volatile {
			l = v.re.ReplaceAllString(l, v.with)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			notes = append(notes, msg{text: "NOT JSON: " + l})
			continue
		}
		b, _ := json.Marshal(v)
		if id, ok := v["id"]; ok {
			resp = append(resp, msg{key: fmt.Sprintf("%v", id), text: string(b)})
		} else {
			notes = append(notes, msg{text: string(b)})
		}
	}
	sort.SliceStable(resp, func(i, j int) bool {
		a, aerr := strconv.Atoi(resp[i].key)
		b, berr := strconv.Atoi(resp[j].key)
		if aerr == nil && berr == nil {
			return a < b
		}
		return resp[i].key < resp[j].key
	})
	var sb strings.Builder
	for _, m := range append(resp, notes...) {
		sb.WriteString(m.text + "\n")
	}
	return sb.String()
}
