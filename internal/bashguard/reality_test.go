package bashguard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// sink records what reaches it over loopback HTTP.
type sink struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // JSON values that arrived, one per place
	reqs int
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		found := arrivedJSON(r, body)
		s.mu.Lock()
		s.reqs++
		s.seen = append(s.seen, found...)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"id":7,"token":"t0"}]`)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) reset() {
	s.mu.Lock()
	s.seen, s.reqs = nil, 0
	s.mu.Unlock()
}

func (s *sink) got() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen), s.reqs
}

// arrivedJSON returns the JSON objects and arrays a request carries: the
// body or a line of it, form fields, multipart parts, query values.
func arrivedJSON(r *http.Request, body []byte) []string {
	var out []string
	add := func(v string) {
		if looksJSON(v) {
			out = append(out, strings.TrimSpace(v))
		}
	}
	for _, vs := range r.URL.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	if raw, err := url.QueryUnescape(r.URL.RawQuery); err == nil {
		for _, kv := range strings.Split(raw, "&") {
			_, v, _ := strings.Cut(kv, "=")
			add(v)
		}
	}
	add(string(body))
	for _, line := range strings.Split(string(body), "\n") {
		add(line)
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/x-www-form-urlencoded":
		if vals, err := url.ParseQuery(string(body)); err == nil {
			for _, vs := range vals {
				for _, v := range vs {
					add(v)
				}
			}
		}
	case "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			add(string(b))
		}
	}
	return out
}

// TestReality runs the live family cases under real bash against a
// loopback sink: the guard's verdict must match what the command really
// delivers. A command the guard allows must not deliver inline JSON, and
// one it refuses as inline JSON must deliver it (unless the case says why
// not), so the verdicts are checked against bash, curl and wget, not
// against the guard's own reading.
func TestReality(t *testing.T) {
	bash := testutil.NeedTool(t, "bash", "", "apt-get install bash")
	for _, p := range []string{"curl", "wget", "jq", "xxd", "git"} {
		testutil.NeedTool(t, p, "", "bash scripts/deps/60-guard-sink.sh")
	}
	s := newSink(t)
	base := s.srv.URL + "/p"
	port := strings.TrimPrefix(s.srv.URL, "http://127.0.0.1:")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "body.json"), []byte(`{"from":"file"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hint := filepath.Join(dir, "x.json")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C", "TERM=dumb"}
	ran := 0
	for _, family := range slices.Sorted(maps.Keys(families)) {
		for _, tc := range families[family] {
			if !tc.live {
				continue
			}
			// Sequential: every case shares the sink.
			t.Run(family+"/"+tc.name, func(t *testing.T) {
				cmd := strings.NewReplacer(U, base, FileHint, hint, TCP, "/dev/tcp/127.0.0.1/"+port).Replace(tc.cmd)
				err := Check(cmd)
				verdict := "allow"
				switch {
				case errors.Is(err, ErrInlineJSON):
					verdict = "json"
				case errors.Is(err, ErrUnknowable):
					verdict = "unknown"
				case err != nil:
					verdict = "other: " + err.Error()
				}
				if verdict != tc.want {
					t.Fatalf("guard on the live command %q: %s (%v), want %s", cmd, verdict, err, tc.want)
				}
				s.reset()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				run := exec.CommandContext(ctx, bash, "-c", cmd)
				run.Dir, run.Env = dir, env
				var out bytes.Buffer
				run.Stdout, run.Stderr = &out, &out
				_ = run.Run() // a failing command is fine; what reached the sink counts
				if ctx.Err() != nil {
					t.Fatalf("bash -c %q did not finish: %s", cmd, out.String())
				}
				seen, reqs := s.got()
				if tc.sinkWant() == "json" && len(seen) == 0 {
					// >(…) substitutions may still be sending when bash exits.
					deadline := time.Now().Add(2 * time.Second)
					for time.Now().Before(deadline) && len(seen) == 0 {
						time.Sleep(20 * time.Millisecond)
						seen, reqs = s.got()
					}
				}
				got := "none"
				if len(seen) > 0 {
					got = "json"
				}
				want := tc.sinkWant()
				if want != "any" && got != want {
					t.Errorf("bash -c %q delivered %s to the sink (%d requests, JSON seen %q; output %q), the case expects %s (guard: %s)",
						cmd, got, reqs, seen, out.String(), want, verdict)
				}
				t.Logf("guard %s; sink got %s %q in %d requests", verdict, got, seen, reqs)
			})
			ran++
		}
	}
	if ran < 60 {
		t.Errorf("only %d live cases ran, want at least 60", ran)
	}
}
