package dashboard_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testutil"
)

// dash is a dashboard served by the real binary for one test.
type dash struct {
	URL  string // http://127.0.0.1:PORT/
	proc *testutil.Process
	// used are the sign-in codes the test already entered.
	used map[string]bool
}

// codePrinted finds the sign-in code on a line the dashboard printed.
var codePrinted = regexp.MustCompile(`enter the code ([0-9A-Z]{5}-[0-9A-Z]{5}) there`)

// runDashboard starts the real binary as `toolhost dashboard args...` on
// a free loopback port and waits for the URL it prints; it is stopped when
// the test ends.
func runDashboard(t testing.TB, args ...string) *dash {
	t.Helper()
	all := append([]string{"dashboard", "--addr", "127.0.0.1:0"}, args...)
	p := testutil.Start(t, testutil.Toolhost(t), all, nil, testutil.DashboardURL)
	return &dash{URL: p.URL, proc: p, used: map[string]bool{}}
}

func (d *dash) stop(t testing.TB) { _ = d.proc.Stop(t) }

// get fetches path from the dashboard with headers; it returns the status
// and the body.
func (d *dash) get(t testing.TB, path string, hdr map[string]string) (int, string) {
	t.Helper()
	return do(t, http.MethodGet, strings.TrimSuffix(d.URL, "/")+path, hdr, "")
}

func do(t testing.TB, method, url string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{Proxy: nil}}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// code is the newest sign-in code the dashboard printed that the test has
// not entered yet (waiting for it: a code is printed when the last one is
// used); it counts as entered from now on.
func (d *dash) code(t testing.TB) string {
	t.Helper()
	var c string
	_, ok := d.proc.WaitFor(30*time.Second, func(l string) bool {
		m := codePrinted.FindStringSubmatch(l)
		if m != nil && !d.used[m[1]] {
			c = m[1]
		}
		return m != nil && !d.used[m[1]]
	})
	if !ok {
		t.Fatalf("the dashboard printed no new code:\n%s", d.proc.Log())
	}
	for _, m := range codePrinted.FindAllStringSubmatch(d.proc.Log(), -1) {
		if !d.used[m[1]] {
			c = m[1]
		}
	}
	d.used[c] = true
	return c
}

// signIn trades the printed code for a session, as a human does in the
// page: the Cookie header that carries it and the page token that goes
// with it.
func (d *dash) signIn(t testing.TB) (cookie, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.URL+"api/session", strings.NewReader(`{"code":"`+d.code(t)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Token string }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || out.Token == "" {
		t.Fatalf("sign-in: %d %v", res.StatusCode, err)
	}
	for _, c := range res.Cookies() {
		if c.Name == "toolhost_session" {
			return c.Name + "=" + c.Value, out.Token
		}
	}
	t.Fatalf("sign-in set no session cookie: %v", res.Header)
	return "", ""
}

// pageToken reads the page token out of the page as a signed-in browser
// gets it (cookie: its session).
func (d *dash) pageToken(t *testing.T, cookie string) string {
	return d.meta(t, "toolhost-token", map[string]string{"Cookie": cookie})
}

// docsBase is the path under which the page links the documents.
func (d *dash) docsBase(t *testing.T) string { return d.meta(t, "toolhost-docs", nil) }

func (d *dash) meta(t *testing.T, name string, hdr map[string]string) string {
	t.Helper()
	status, page := d.get(t, "/", hdr)
	marker := `name="` + name + `" content="`
	i := strings.Index(page, marker)
	if status != http.StatusOK || i < 0 {
		t.Fatalf("GET / = %d, no token in %.300s", status, page)
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

// state is GET /api/state.
func (d *dash) state(t testing.TB) snapshot {
	t.Helper()
	status, body := d.get(t, "/api/state", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/state = %d: %s", status, body)
	}
	var s snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshot is the part of /api/state the tests read.
type snapshot struct {
	Audit []struct {
		CallID string `json:"call_id"`
		Tool   string `json:"tool"`
		Agent  string `json:"agent"`
		Status string `json:"status"`
	} `json:"audit"`
	Timeline []struct {
		Message string `json:"message"`
	} `json:"timeline"`
	Agents []struct {
		Short   string `json:"short"`
		Serving []struct {
			PID int `json:"pid"`
		} `json:"serving"`
		LastServe *struct {
			State string `json:"state"`
		} `json:"last_serve"`
		LastCall *struct {
			Tool string `json:"tool"`
		} `json:"last_call"`
	} `json:"agents"`
	Approvals struct {
		Pending []struct {
			ID   string `json:"id"`
			Diff *struct {
				Path    string `json:"path"`
				Unified string `json:"unified"`
			} `json:"diff"`
		} `json:"pending"`
	} `json:"approvals"`
}

// eventually retries check until it returns "" or the time is up.
func eventually(t *testing.T, within time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// treeHash is the names, kinds and contents of every file under dir: what
// must not change when the dashboard only reads.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info := e.Type().String()
		if e.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		lines = append(lines, rel+" "+info)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// confirmPolicy is a policy file in dir under which record_memory needs a
// human's confirmation, and a rule refuses the keys that start with
// "draft": the embedded default with those two changes.
func confirmPolicy(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "configs", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["tools"].(map[string]any)["record_memory"].(map[string]any)["confirm"] = true
	doc["rules"] = []map[string]any{{"id": "no-draft-memory", "tool": "record_memory", "when": "args.key.startsWith('draft')",
		"effect": "deny", "reason": "drafts are not kept in memory"}}
	out, _ := json.MarshalIndent(doc, "", "  ")
	p := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
