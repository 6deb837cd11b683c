package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
)

// browser is headless Chromium driven over CDP for one test, collecting
// what its console and its network log report as errors.
type browser struct {
	ctx       context.Context
	artifacts string
	mu        sync.Mutex
	errors    []string
	// expected are errors a step provokes on purpose (substrings).
	expected []string
}

// expectError says that an error containing text is the test's own doing.
func (b *browser) expectError(text string) {
	b.mu.Lock()
	b.expected = append(b.expected, text)
	b.mu.Unlock()
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := testutil.NeedTool(t, "chromium", "TOOLHOST_CHROMIUM", "bash scripts/deps/20-chromium.sh")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-proxy-server", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900), chromedp.Env("HOME="+t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The screenshots are kept after the run (git-ignored), as the docs
	// package keeps its browser test's.
	b := &browser{ctx: ctx, artifacts: os.Getenv("TOOLHOST_TEST_ARTIFACTS")}
	if b.artifacts == "" {
		b.artifacts = filepath.Join("testdata", "artifacts")
	}
	if err := os.MkdirAll(b.artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				msg = "log: " + e.Entry.Text + " " + e.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []cdp.Command[cdp.Empty, cdp.Empty]{cdplog.Enable, runtime.Enable} {
		if _, err := chromedp.Call(ctx, cmd, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *browser) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.screenshot(t, "failure")
		t.Fatalf("browser: %v", err)
	}
}

// waitFor polls a JavaScript expression until it is true; it returns how
// long that took.
func (b *browser) waitFor(t *testing.T, what, expr string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(within)))
	if err != nil || !ok {
		b.screenshot(t, "failure")
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 3000)`))
		t.Fatalf("%s: not within %v (%v)\npage:\n%s", what, within, err, body)
	}
	return time.Since(start)
}

// screenshot keeps what the page shows as a test artifact.
func (b *browser) screenshot(t *testing.T, name string) {
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.artifacts, t.Name()+"-"+name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", p)
}

func (b *browser) noErrors(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var unexpected []string
	for _, e := range b.errors {
		ok := false
		for _, x := range b.expected {
			ok = ok || strings.Contains(e, x)
		}
		if !ok {
			unexpected = append(unexpected, e)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(unexpected, "\n"))
	}
}

var confirmationID = regexp.MustCompile(`cf-[0-9A-Za-z]+`)

// pending calls record_memory under the confirming policy and returns the
// confirmation it waits on.
func pending(t *testing.T, c *stdioclient.Client, args map[string]any) string {
	t.Helper()
	r := testutil.CallTool(t, c, "record_memory", args)
	id := confirmationID.FindString(r.Text())
	if !r.IsError || !strings.Contains(r.Text(), "needs_confirmation") || id == "" {
		t.Fatalf("record_memory did not wait for a human: %s", r.Text())
	}
	return id
}

func js(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// decided is the condition that a confirmation's decision shows: on its
// card ("Approved: …"), or, once the next state moved the card out of the
// waiting list, as the first entry of the recent decisions ("approved …").
func decided(card, id, outcome string) string {
	return js(`(document.querySelector('%s .outcome') || {textContent: ""}).textContent.startsWith(%q) ||
		(document.querySelector('#recent-list li[data-id="%s"]') || {textContent: ""}).textContent.startsWith(%q)`,
		card, outcome, id, strings.ToLower(outcome))
}

// TestBrowser drives the dashboard in headless Chromium against servers
// running beside it: a call made by a separate `toolhost serve` shows in
// the audit stream and its agent's card within a second, without reload;
// a pending confirmation shows with its diff, Approve lets the identical
// call run and Deny refuses it; the filters filter; a bug opened by
// bug_open shows on the board and opens; a server killed shows as gone;
// and the page logs no error.
func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	policy := confirmPolicy(t, t.TempDir())
	pm := testutil.Serve(t, "--project-dir", dir, "--agent", "pm", "--session", "sess-browser-pm", "--policy", policy)
	d := runDashboard(t, "--project-dir", dir, "--policy", policy)
	b.run(t, chromedp.Navigate(d.URL))
	b.waitFor(t, "the stream is live", `document.getElementById("conn").dataset.state === "live"`, 20*time.Second)
	b.waitFor(t, "the pm card shows its server", js(`(document.querySelector('.card[data-agent="pm"] .serve') || {}).textContent.includes("pid %d")`, pm.Process().PID), 10*time.Second)

	// A call of the running server, seen live.
	testutil.CallToolMeta(t, pm, "timeline_append", map[string]any{"kind": "note", "message": "seen live"}, map[string]any{"call_id": "call-live-1"})
	took := b.waitFor(t, "the call in the audit stream and the pm card", `!!document.querySelector('#audit-body tr[data-call="call-live-1"]') &&
		document.querySelector('.card[data-agent="pm"] .last').textContent.includes("timeline_append") &&
		document.getElementById("timeline-list").textContent.includes("seen live")`, 15*time.Second)
	t.Logf("the call showed %v after its response", took)
	if took > time.Second {
		t.Errorf("the call showed after %v, want within 1 s", took)
	}
	b.screenshot(t, "live")

	// Approve: the identical call then runs.
	id := pending(t, pm, map[string]any{"key": "approved-note", "content": "hello from the page"})
	card := js(`.approval[data-id="%s"]`, id)
	b.waitFor(t, "the pending confirmation", js(`(document.querySelector('%s') || {textContent: ""}).textContent.includes("record_memory") &&
		document.querySelector('%s .diff').textContent.includes("+hello from the page")`, card, card), 15*time.Second)
	b.screenshot(t, "pending")
	// Only a signed-in human decides: until the code printed on the
	// dashboard's terminal is entered, the buttons are off and the page has
	// no decision token; a wrong code is refused.
	b.waitFor(t, "the buttons off before the sign-in", js(`document.querySelector('%s button[data-action="approve"]').disabled &&
		!document.getElementById("signin").hidden && document.querySelector('meta[name="toolhost-token"]').content === ""`, card), 5*time.Second)
	b.expectError("403 (Forbidden) " + d.URL + "api/session")
	b.run(t, chromedp.SendKeys(chromedp.CSS("#signin-code"), "00000-00000"), chromedp.Click(chromedp.CSS("#signin-go")))
	b.waitFor(t, "a wrong code refused", `document.getElementById("signin-note").textContent.startsWith("wrong code")`, 10*time.Second)
	b.run(t, chromedp.Evaluate[chromedp.Void](`document.getElementById("signin-code").value = ""`), chromedp.SendKeys(chromedp.CSS("#signin-code"), d.code(t)), chromedp.Click(chromedp.CSS("#signin-go")))
	b.waitFor(t, "signed in", js(`document.getElementById("signin").hidden && !document.querySelector('%s button[data-action="approve"]').disabled`, card), 10*time.Second)
	if cookie, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.cookie`)); err != nil || strings.Contains(cookie, "toolhost_session") {
		t.Fatalf("the session cookie is readable by the page's script (%q, %v): it must be HttpOnly", cookie, err)
	}
	b.run(t, chromedp.Click(chromedp.CSS(card+` button[data-action="approve"]`)))
	b.waitFor(t, "the approval's outcome", decided(card, id, "Approved"), 15*time.Second)
	if r := testutil.CallTool(t, pm, "record_memory", map[string]any{"key": "approved-note", "content": "hello from the page"}); r.IsError {
		t.Fatalf("the approved call was refused: %s", r.Text())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory", "devloop", "pm", "approved-note.md")); err != nil || string(b) != "hello from the page\n" {
		t.Fatalf("the approved note: %q %v", b, err)
	}
	b.waitFor(t, "the approved call in the audit stream", `[...document.querySelectorAll("#audit-body tr.ok")].some(r => r.textContent.includes("record_memory"))`, 15*time.Second)

	// Deny: the identical call is refused.
	id = pending(t, pm, map[string]any{"key": "denied-note", "content": "no"})
	card = js(`.approval[data-id="%s"]`, id)
	b.waitFor(t, "the second confirmation", js(`!!document.querySelector('%s button[data-action="deny"]')`, card), 15*time.Second)
	b.run(t, chromedp.Click(chromedp.CSS(card+` button[data-action="deny"]`)))
	b.waitFor(t, "the denial's outcome", decided(card, id, "Denied"), 15*time.Second)
	r := testutil.CallTool(t, pm, "record_memory", map[string]any{"key": "denied-note", "content": "no"})
	if !r.IsError || !strings.Contains(r.Text(), "denied") {
		t.Fatalf("the denied call: %s", r.Text())
	}
	if _, err := os.Stat(filepath.Join(dir, "memory", "devloop", "pm", "denied-note.md")); err == nil {
		t.Fatal("the denied call wrote its note")
	}
	b.waitFor(t, "the confirmations decided", `document.querySelectorAll(".approval").length === 0 && document.getElementById("recent-list").children.length >= 2`, 15*time.Second)

	// A refusal by a policy rule stands out with its rule and reason.
	if r := testutil.CallToolMeta(t, pm, "record_memory", map[string]any{"key": "draft-1", "content": "x"}, map[string]any{"call_id": "call-rule-1"}); !r.IsError {
		t.Fatalf("the rule did not refuse: %s", r.Text())
	}
	b.waitFor(t, "the refusal with its rule", `(() => { const r = document.querySelector('#audit-body tr.rejected[data-call="call-rule-1"]');
		return !!r && r.querySelector(".detail .rule").textContent === "rule no-draft-memory" &&
			r.querySelector(".detail").textContent.includes("drafts are not kept in memory"); })()`, 15*time.Second)

	// Filters.
	setFilter := func(sel, v string) {
		b.run(t, chromedp.SetValue(chromedp.CSS(sel), v), chromedp.Evaluate[chromedp.Void](js(`document.querySelector('%s').dispatchEvent(new Event("change"))`, sel)))
	}
	setFilter("#f-status", "rejected")
	b.waitFor(t, "only refusals shown", `(() => { const rows = [...document.querySelectorAll("#audit-body tr[data-call]")];
		return rows.length >= 3 && rows.every(r => r.classList.contains("rejected")) &&
			document.getElementById("filter-note").textContent.includes("matching rows"); })()`, 15*time.Second)
	setFilter("#f-status", "")
	setFilter("#f-tool", "timeline_append")
	b.waitFor(t, "only timeline_append shown", `(() => { const rows = [...document.querySelectorAll("#audit-body tr[data-call]")];
		return rows.length === 1 && rows[0].dataset.call === "call-live-1"; })()`, 15*time.Second)
	b.run(t, chromedp.Click(chromedp.CSS("#f-clear")))
	b.waitFor(t, "every row again", `document.querySelectorAll("#audit-body tr[data-call]").length === 6`, 15*time.Second)

	// A bug opened by bug_open, on the board and opened.
	tester := testutil.Serve(t, "--project-dir", dir, "--agent", "tester", "--unit", "api", "--session", "sess-browser-tester")
	testutil.ResultOK(t, "bug_open", testutil.CallTool(t, tester, "bug_open", map[string]any{
		"title": "GET /todos answers 404", "unit_id": "api", "severity": "blocker",
		"evidence": map[string]any{"repro": "curl http://127.0.0.1:1/todos", "log": "Error: route not found"},
	}), nil)
	bug := `.column[data-status="open"] .bug[data-bug="BUG-0001"]`
	b.waitFor(t, "the bug on the board", js(`(document.querySelector('%s') || {textContent: ""}).textContent.includes("GET /todos answers 404")`, bug), 15*time.Second)
	b.run(t, chromedp.Click(chromedp.CSS(bug)))
	b.waitFor(t, "the bug's JSON in the drawer", `!document.getElementById("drawer").hidden && document.getElementById("drawer-body").textContent.includes('"fingerprint"')`, 15*time.Second)
	b.screenshot(t, "bug")
	b.run(t, chromedp.Click(chromedp.CSS("#drawer-close")))

	// A server killed without ending shows as gone.
	if err := syscall.Kill(pm.Process().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the killed server shown as gone", `!!document.querySelector('.card[data-agent="pm"] .dot.gone')`, 15*time.Second)
	b.screenshot(t, "final")
	b.waitFor(t, "six agent cards", `document.querySelectorAll(".card").length === 6`, time.Second)

	// The PRD site, opened from the dashboard's link, runs its own search
	// in its sandbox.
	pm2 := testutil.Serve(t, "--project-dir", dir, "--agent", "pm", "--session", "sess-browser-pm2")
	testutil.ResultOK(t, "bootstrap_prd_site", testutil.CallTool(t, pm2, "bootstrap_prd_site", map[string]any{
		"title": "Todo", "chapters": []map[string]any{{"id": "goals", "title": "Goals"}}}), nil)
	testutil.ResultOK(t, "write_chapter", testutil.CallTool(t, pm2, "write_chapter", map[string]any{
		"site": "prd", "chapter_id": "goals", "html": "<section><h2>Offline</h2><p>Works without a network.</p></section>"}), nil)
	testutil.ResultOK(t, "update_search_index", testutil.CallTool(t, pm2, "update_search_index", map[string]any{"site": "prd"}), nil)
	b.waitFor(t, "the PRD link", `!!document.querySelector('#doc-list a[href$="prd/index.html"]')`, 15*time.Second)
	href, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#doc-list a[href$="prd/index.html"]').href`))
	if err != nil {
		t.Fatal(err)
	}
	b.run(t, chromedp.Navigate(href+"?q=network"))
	b.waitFor(t, "the PRD site's search", `(document.getElementById("result-count") || {}).textContent === "1 result"`, 15*time.Second)
	b.screenshot(t, "prd")
	b.noErrors(t)
}

// TestBrowserShowsWhatRuns: in a real browser, what a human decides on
// reads as what runs — a confirmed bash command with a substitution under
// a secret-looking name is shown whole on its approval card — and text an
// agent wrote with bidirectional and other invisible characters (a
// timeline entry, its runtime message, a todolist step, an approval's
// arguments) shows them as escapes: none reaches the page's text or its
// tooltips raw.
func TestBrowserShowsWhatRuns(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	policy := confirmPolicy(t, t.TempDir())
	raw, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	// bash confirmed too.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["tools"].(map[string]any)["bash"].(map[string]any)["confirm"] = true
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(policy, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "units/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	coder := testutil.Serve(t, "--project-dir", dir, "--agent", "coder", "--unit", "a", "--session", "sess-show-coder", "--policy", policy)
	pm := testutil.Serve(t, "--project-dir", dir, "--agent", "pm", "--session", "sess-show-pm", "--policy", policy)
	command := `API_TOKEN="$(touch hidden)" touch shown`
	if r := testutil.CallTool(t, coder, "bash", map[string]any{"command": command}); !r.IsError || !strings.Contains(r.Text(), "needs_confirmation") {
		t.Fatalf("bash did not wait for a human: %s", r.Text())
	}
	bidi := "evil \u202etxt.exe\u202c \u2066iso\u2069 \u200frlm\u200b zw\ufeff"
	testutil.ResultOK(t, "timeline_append", testutil.CallTool(t, pm, "timeline_append", map[string]any{"kind": "note", "message": "tl " + bidi}), nil)
	testutil.ResultOK(t, "update_runtime_state", testutil.CallTool(t, pm, "update_runtime_state", map[string]any{"message": "rt " + bidi}), nil)
	testutil.ResultOK(t, "write_todolist", testutil.CallTool(t, pm, "write_todolist", map[string]any{"items": []map[string]any{{"id": "step-001", "description": "td " + bidi}}}), nil)
	pending(t, pm, map[string]any{"key": "bidi-note", "content": "ap " + bidi})

	d := runDashboard(t, "--project-dir", dir, "--policy", policy)
	b.run(t, chromedp.Navigate(d.URL))
	b.waitFor(t, "the bash card with the command whole", js(`[...document.querySelectorAll(".approval")].some(c => c.textContent.includes("bash") &&
		c.querySelector("pre").textContent.includes(%q) && !c.textContent.includes("REDACTED"))`, `API_TOKEN=\"$(touch hidden)\" touch shown`), 20*time.Second)
	b.waitFor(t, "everything shown", `document.getElementById("timeline-list").textContent.includes("tl evil") &&
		document.querySelector('.card[data-agent="pm"]').textContent.includes("rt evil") &&
		[...document.querySelectorAll(".approval")].some(c => c.textContent.includes("ap evil"))`, 20*time.Second)
	b.screenshot(t, "shown")
	// The card's todolist step opens in the drawer.
	b.run(t, chromedp.Click(chromedp.CSS(`.card[data-agent="pm"]`)))
	b.waitFor(t, "the todolist in the drawer", `document.getElementById("drawer-body").textContent.includes("td evil")`, 10*time.Second)
	hidden := `/[\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff\u061c]/`
	for _, where := range []string{
		`document.getElementById("timeline-list")`, `document.querySelector('.card[data-agent="pm"]')`,
		`document.getElementById("approval-list")`, `document.getElementById("drawer-body")`, `document.body`,
	} {
		b.waitFor(t, "no raw bidi or format character in "+where, js(`(() => { const e = %s; const titles = [...e.querySelectorAll("[title]")].map(x => x.title).join(" ");
			return !%s.test(e.textContent + titles) && (e === document.body || e.textContent.includes("\\u202e")); })()`, where, hidden), 5*time.Second)
	}
	b.noErrors(t)
}
