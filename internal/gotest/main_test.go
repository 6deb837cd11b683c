package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// feed hands an account a go test -json stream line by line, moving the
// fake clock by step and checking for a progress line at each "tick".
func feed(stream string, step time.Duration) string {
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	s := newAccount(&out, func() time.Time { return clock })
	for _, l := range strings.Split(strings.TrimSpace(stream), "\n") {
		if l = strings.TrimSpace(l); l == "tick" {
			clock = clock.Add(step)
			s.progress()
			continue
		}
		s.handle(parse([]byte(l)))
	}
	s.finish()
	return out.String()
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	const p = "github.com/toolhost/toolhost/internal/"
	got := feed(`
		{"Action":"start","Package":"`+p+`fast"}
		{"Action":"run","Package":"`+p+`fast","Test":"TestOK"}
		{"Action":"output","Package":"`+p+`fast","Test":"TestOK","Output":"=== RUN   TestOK\n"}
		{"Action":"pass","Package":"`+p+`fast","Test":"TestOK","Elapsed":0.01}
		{"Action":"pass","Package":"`+p+`fast","Elapsed":1.25}
		{"Action":"start","Package":"`+p+`slow"}
		{"Action":"run","Package":"`+p+`slow","Test":"TestBrowser"}
		{"Action":"run","Package":"`+p+`slow","Test":"TestBrowser/search"}
		{"Action":"run","Package":"`+p+`slow","Test":"TestWaiting"}
		{"Action":"pause","Package":"`+p+`slow","Test":"TestWaiting"}
		tick
		{"Action":"output","Package":"`+p+`slow","Test":"TestBrowser/search","Output":"    browser_test.go:9: chromium not installed; run: make deps\n"}
		{"Action":"skip","Package":"`+p+`slow","Test":"TestBrowser/search"}
		{"Action":"pass","Package":"`+p+`slow","Test":"TestBrowser"}
		{"Action":"cont","Package":"`+p+`slow","Test":"TestWaiting"}
		{"Action":"output","Package":"`+p+`slow","Test":"TestWaiting","Output":"=== CONT  TestWaiting\n"}
		{"Action":"output","Package":"`+p+`slow","Test":"TestWaiting","Output":"    slow_test.go:20: want 2, got 3\n"}
		{"Action":"output","Package":"`+p+`slow","Test":"TestWaiting","Output":"--- FAIL: TestWaiting (0.50s)\n"}
		{"Action":"fail","Package":"`+p+`slow","Test":"TestWaiting","Elapsed":0.5}
		{"Action":"output","Package":"`+p+`slow","Output":"FAIL\n"}
		{"Action":"fail","Package":"`+p+`slow","Elapsed":41.7}
		{"Action":"skip","Package":"`+p+`empty"}
		{"ImportPath":"`+p+`broken [`+p+`broken.test]","Action":"build-output","Output":"internal/broken/x.go:3:1: syntax error\n"}
		{"ImportPath":"`+p+`broken [`+p+`broken.test]","Action":"build-fail"}
		not json at all
		tick
	`, 40*time.Second)
	want := `ok    internal/fast	1.2s
… 40s: still running: internal/slow (TestBrowser/search 40s)
=== CONT  TestWaiting
    slow_test.go:20: want 2, got 3
--- FAIL: TestWaiting (0.50s)
FAIL
FAIL  internal/slow	41.7s
internal/broken/x.go:3:1: syntax error
not json at all
… 80s: compiling the test binaries (3 packages done; the first run compiles every package with -race)
skipped because a program they drive is missing (make deps installs them):
  internal/slow TestBrowser/search: browser_test.go:9: chromium not installed; run: make deps
`
	if got != want {
		t.Fatalf("account:\n%s\nwant:\n%s", got, want)
	}
}

// TestQuietRunPrintsNothingExtra: a tick before 30 s of silence adds no line.
func TestQuietRunPrintsNothingExtra(t *testing.T) {
	t.Parallel()
	got := feed(`
		{"Action":"start","Package":"x"}
		{"Action":"run","Package":"x","Test":"TestA"}
		tick
		{"Action":"pass","Package":"x","Test":"TestA"}
		{"Action":"pass","Package":"x","Elapsed":3}
	`, 10*time.Second)
	if got != "ok    x\t3.0s\n" {
		t.Fatalf("account %q", got)
	}
}

// TestSummarizeReadsAStream: the reader side hands every line over, in
// order, and the account ends when the stream does.
func TestSummarizeReadsAStream(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	stream := `{"Action":"start","Package":"x"}` + "\n" + `{"Action":"pass","Package":"x","Elapsed":2}` + "\nplain line\n"
	summarize(strings.NewReader(stream), &out, nil, time.Now)
	if out.String() != "ok    x\t2.0s\nplain line\n" {
		t.Fatalf("account %q", out.String())
	}
}
