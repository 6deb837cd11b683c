package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// The six agents' scripts. Every step checks what the tool answered (and,
// where it matters, what is on disk) and fails with what it saw otherwise.

// unitID is the demo's one code unit, the todo API.
const unitID = "todo-be"

// Tool results the steps read (the fields they check).
type (
	writeResult struct {
		Path     string `json:"path"`
		Version  int    `json:"version"`
		Archived int    `json:"archived"`
		Units    []struct {
			Unit string `json:"unit"`
		} `json:"units"`
	}
	diffCounts struct {
		Added, Removed, Changed, Unchanged int
	}
	finding struct {
		Page   string `json:"page"`
		Rule   string `json:"rule"`
		Detail string `json:"detail"`
	}
	validation struct {
		Pages    int       `json:"pages"`
		Errors   []finding `json:"errors"`
		Warnings []finding `json:"warnings"`
	}
	vitestFailure struct {
		File    string `json:"file"`
		Name    string `json:"name"`
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	// evidenceResult and classifyResult are what the Triager's steps read
	// of extract_evidence and category_classifier.
	evidenceResult struct {
		Path           string `json:"path"`
		EvidenceStatus string `json:"evidence_status"`
		Verified       []struct {
			Kind    string `json:"kind"`
			Path    string `json:"path"`
			Excerpt string `json:"excerpt"`
		} `json:"verified"`
		Missing []struct {
			Cited  string `json:"cited"`
			Reason string `json:"reason"`
		} `json:"missing"`
	}
	classifyResult struct {
		Category   string  `json:"category"`
		Confidence float64 `json:"confidence"`
		Signals    []struct {
			Rule    string `json:"rule"`
			Where   string `json:"where"`
			Excerpt string `json:"excerpt"`
		} `json:"signals"`
	}
	bugOpened struct {
		ID        string `json:"id"`
		Path      string `json:"path"`
		Duplicate bool   `json:"duplicate"`
		Status    string `json:"status"`
	}
	route struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	}
)

func (w writeResult) unitIDs() []string {
	ids := make([]string, len(w.Units))
	for i, u := range w.Units {
		ids[i] = u.Unit
	}
	return ids
}

func section(heading, body string) string {
	return "<section><h2>" + html.EscapeString(heading) + "</h2>" + body + "</section>"
}

// The PRD's chapters: what the PM writes first, and the revision of
// stories (one section changed, one added).
var (
	prdOverview = section("Problem", "<p>Small tasks get lost between chats and notes. The todo service keeps one list that any client can read and change over HTTP.</p>") +
		section("Users", "<p>One person with a browser or a script. No accounts in the first version.</p>")
	prdStories = section("Create a todo", "<p>A user adds a todo with a title and gets back its id.</p>") +
		section("Complete a todo", "<p>A user marks a todo done.</p>") +
		section("Delete a todo", "<p>A user removes a todo they no longer need; it is gone from the list.</p>")
	prdStoriesRevised = section("Create a todo", "<p>A user adds a todo with a title and gets back its id.</p>") +
		section("Complete a todo", "<p>A user marks a todo done, and can mark it open again.</p>") +
		section("Delete a todo", "<p>A user removes a todo they no longer need; it is gone from the list.</p>") +
		section("List todos", "<p>A user sees every todo in the order it was created.</p>")
	prdPrototype = section("Todo list", `<ul><li><input type="checkbox" checked> Write the PRD</li><li><input type="checkbox"> Review the SDD</li></ul>`+
		`<form><input placeholder="What needs doing?"> <button type="button">Add</button></form>`+
		`<p>Implements <a href="../stories.html#create-a-todo">Create a todo</a> and <a href="../stories.html#complete-a-todo">Complete a todo</a>.</p>`)
)

func (r *runner) pmSteps(s *agentSession) []step {
	return []step{
		{"write_todolist", func() (string, error) {
			var out struct {
				Total int    `json:"total"`
				Path  string `json:"path"`
			}
			err := s.call("write_todolist", map[string]any{"items": []map[string]any{
				{"id": "step-001", "description": "bootstrap the PRD site"},
				{"id": "step-002", "description": "write the overview and the user stories", "depends_on": []string{"step-001"}},
				{"id": "step-003", "description": "sketch the todo list prototype", "depends_on": []string{"step-001"}},
				{"id": "step-004", "description": "index and validate the site", "depends_on": []string{"step-002", "step-003"}},
			}}, &out)
			if err != nil {
				return "", err
			}
			if out.Total != 4 {
				return "", fmt.Errorf("total = %d, want 4", out.Total)
			}
			r.artifact(out.Path)
			return fmt.Sprintf("%s with %d steps", out.Path, out.Total), nil
		}},
		{"bootstrap_prd_site", func() (string, error) {
			var out struct {
				Files []string `json:"files"`
			}
			err := s.call("bootstrap_prd_site", map[string]any{"title": "Todo service — PRD", "chapters": []map[string]any{
				{"id": "overview", "title": "Overview"},
				{"id": "stories", "title": "User stories"},
			}}, &out)
			if err != nil {
				return "", err
			}
			if !slices.Contains(out.Files, "prd/index.html") {
				return "", fmt.Errorf("files %v lack prd/index.html", out.Files)
			}
			r.artifact("prd/index.html")
			return fmt.Sprintf("prd/ with 2 chapters, %d files", len(out.Files)), nil
		}},
		{"write_chapter overview", func() (string, error) {
			return r.writePRDChapter(s, "overview", prdOverview, 2)
		}},
		{"write_chapter stories", func() (string, error) {
			return r.writePRDChapter(s, "stories", prdStories, 3)
		}},
		{"write_mvcp_page", func() (string, error) {
			var out writeResult
			if err := s.call("write_mvcp_page", map[string]any{"name": "todo-list", "title": "Todo list", "html": prdPrototype}, &out); err != nil {
				return "", err
			}
			if out.Path != "prd/mvcp/todo-list.html" {
				return "", fmt.Errorf("path = %q, want prd/mvcp/todo-list.html", out.Path)
			}
			r.artifact(out.Path)
			return out.Path, nil
		}},
		{"revise stories", func() (string, error) {
			return r.writePRDChapter(s, "stories", prdStoriesRevised, 4)
		}},
		{"diff_units", func() (string, error) {
			var out struct {
				From   string     `json:"from"`
				To     string     `json:"to"`
				Counts diffCounts `json:"counts"`
			}
			if err := s.call("diff_units", map[string]any{"path": "prd/stories.html"}, &out); err != nil {
				return "", err
			}
			if want := (diffCounts{Added: 1, Changed: 1, Unchanged: 2}); out.Counts != want {
				return "", fmt.Errorf("counts %+v, want %+v (list-todos added, complete-a-todo changed)", out.Counts, want)
			}
			return fmt.Sprintf("%s → %s: 1 added, 1 changed, 2 unchanged", out.From, out.To), nil
		}},
		{"echo_diff", func() (string, error) {
			var out struct {
				Markdown string     `json:"markdown"`
				Counts   diffCounts `json:"counts"`
				Seq      int        `json:"seq"`
			}
			if err := s.call("echo_diff", map[string]any{"path": "prd/stories.html"}, &out); err != nil {
				return "", err
			}
			if out.Counts.Added != 1 || out.Counts.Changed != 1 || !strings.Contains(out.Markdown, "list-todos") || out.Seq <= 0 {
				return "", fmt.Errorf("summary does not report the revision: seq %d, %+v, %q", out.Seq, out.Counts, out.Markdown)
			}
			r.artifact("timeline.ndjson")
			first, _, _ := strings.Cut(out.Markdown, "\n")
			return fmt.Sprintf("timeline #%d: %s", out.Seq, strings.ReplaceAll(first, "**", "")), nil
		}},
		{"update_search_index", func() (string, error) {
			var out struct {
				Path    string `json:"path"`
				Pages   int    `json:"pages"`
				Entries int    `json:"entries"`
			}
			if err := s.call("update_search_index", map[string]any{"site": "prd"}, &out); err != nil {
				return "", err
			}
			if out.Pages != 3 || out.Entries == 0 {
				return "", fmt.Errorf("indexed %d pages with %d entries; want the 2 chapters and the prototype", out.Pages, out.Entries)
			}
			r.artifact(out.Path)
			return fmt.Sprintf("%s: %d pages, %d entries", out.Path, out.Pages, out.Entries), nil
		}},
		{"validate_prd_site", func() (string, error) {
			var out validation
			if err := s.call("validate_prd_site", map[string]any{}, &out); err != nil {
				return "", err
			}
			if len(out.Errors) > 0 {
				return "", fmt.Errorf("%d errors, first: %+v", len(out.Errors), out.Errors[0])
			}
			return fmt.Sprintf("%d pages, no errors, %d warnings", out.Pages, len(out.Warnings)), nil
		}},
		{"update_todo_item", func() (string, error) {
			var out struct {
				ProgressPct int    `json:"progress_pct"`
				Current     string `json:"current"`
			}
			for _, id := range []string{"step-001", "step-002", "step-003", "step-004"} {
				if err := s.call("update_todo_item", map[string]any{"id": id, "status": "done"}, &out); err != nil {
					return "", err
				}
			}
			if out.ProgressPct != 100 {
				return "", fmt.Errorf("progress %d%% after every step is done", out.ProgressPct)
			}
			return "4 steps done, progress 100%", nil
		}},
	}
}

// writePRDChapter writes one PRD chapter and remembers its units for the
// Architect's data-prd-ref.
func (r *runner) writePRDChapter(s *agentSession, id, body string, wantUnits int) (string, error) {
	var out writeResult
	if err := s.call("write_chapter", map[string]any{"site": "prd", "chapter_id": id, "html": body}, &out); err != nil {
		return "", err
	}
	if len(out.Units) != wantUnits {
		return "", fmt.Errorf("units %v, want %d (one per top-level section)", out.unitIDs(), wantUnits)
	}
	page := strings.TrimPrefix(out.Path, "prd/")
	if _, seen := r.prdUnits[page]; !seen {
		r.artifact(out.Path)
	}
	r.prdUnits[page] = out.unitIDs()
	archived := ""
	if out.Archived > 0 {
		archived = fmt.Sprintf(", previous page archived as v%d", out.Archived)
	}
	return fmt.Sprintf("%s v%d, units %s%s", out.Path, out.Version, strings.Join(out.unitIDs(), " "), archived), nil
}

// prdRefs is the data-prd-ref value naming every unit of a PRD page.
func (r *runner) prdRefs(page string) (string, error) {
	units := r.prdUnits[page]
	if len(units) == 0 {
		return "", fmt.Errorf("the PM wrote no units on %s", page)
	}
	refs := make([]string, len(units))
	for i, u := range units {
		refs[i] = page + "#" + u
	}
	return strings.Join(refs, " "), nil
}

func (r *runner) architectSteps(s *agentSession) []step {
	return []step{
		{"bootstrap_sdd_site", func() (string, error) {
			var out struct {
				Files []string `json:"files"`
			}
			err := s.call("bootstrap_sdd_site", map[string]any{"title": "Todo service — SDD", "chapters": []map[string]any{
				{"id": "design", "title": "Design"},
				{"id": "api", "title": "API"},
			}}, &out)
			if err != nil {
				return "", err
			}
			if !slices.Contains(out.Files, "sdd/index.html") {
				return "", fmt.Errorf("files %v lack sdd/index.html", out.Files)
			}
			r.artifact("sdd/index.html")
			return fmt.Sprintf("sdd/ with 2 chapters, %d files", len(out.Files)), nil
		}},
		{"refused as expected (sandbox):", func() (string, error) {
			// The PM's site: the page and its archive stay as the PM left
			// them, because the door checks the whole write first.
			before, err := os.ReadFile(filepath.Join(r.dir, "prd", "stories.html"))
			if err != nil {
				return "", err
			}
			msg, err := s.refused("sandbox", "write_chapter", map[string]any{"site": "prd", "chapter_id": "stories", "html": section("Stories", "<p>The Architect tries to edit the PRD.</p>")},
				"Sandbox violation: devloop-architect tried to write prd/stories.html")
			if err != nil {
				return "", err
			}
			if after, err := os.ReadFile(filepath.Join(r.dir, "prd", "stories.html")); err != nil || string(after) != string(before) {
				return "", errors.New("the refused write changed prd/stories.html")
			}
			return firstLine(msg), nil
		}},
		{"CLI Write", func() (string, error) {
			if err := r.cliWrite(s.ctx, "architect", "contracts/todo.json", contractJSON); err != nil {
				return "", err
			}
			r.artifact("contracts/todo.json")
			return fmt.Sprintf("contracts/todo.json (%d bytes), allowed by the PreToolUse hook", len(contractJSON)), nil
		}},
		{"hash_contract", func() (string, error) {
			var out struct {
				SHA256  string `json:"sha256"`
				Changed bool   `json:"changed"`
			}
			if err := s.call("hash_contract", map[string]any{"path": "contracts/todo.json"}, &out); err != nil {
				return "", err
			}
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(out.SHA256) || out.Changed {
				return "", fmt.Errorf("sha256 %q changed %v; want a fresh 64-hex hash", out.SHA256, out.Changed)
			}
			r.contractSHA = out.SHA256
			r.artifact("contracts/hashes.json")
			return "sha256 " + out.SHA256[:12] + "… recorded in contracts/hashes.json", nil
		}},
		{"write_chapter design", func() (string, error) {
			refs, err := r.prdRefs("overview.html")
			if err != nil {
				return "", err
			}
			body := `<section data-prd-ref="` + refs + `"><h2>Architecture</h2><p>One HTTP service, unit <code>todo-be</code>, keeps the todos in memory and serves JSON on 127.0.0.1.</p></section>` +
				section("Storage", "<p>A map from id to todo behind a mutex; ids are increasing integers sent as strings.</p>")
			return r.writeSDDChapter(s, "design", body)
		}},
		{"write_chapter api", func() (string, error) {
			refs, err := r.prdRefs("stories.html")
			if err != nil {
				return "", err
			}
			rows, err := endpointRows()
			if err != nil {
				return "", err
			}
			body := `<section data-prd-ref="` + refs + `" data-contract="todo"><h2>Endpoints</h2><p>The contract <code>contracts/todo.json</code>:</p>` +
				`<table><tr><th>endpoint</th><th>request</th><th>status</th></tr>` + rows + `</table></section>`
			return r.writeSDDChapter(s, "api", body)
		}},
		{"update_search_index", func() (string, error) {
			var out struct {
				Path    string `json:"path"`
				Pages   int    `json:"pages"`
				Entries int    `json:"entries"`
			}
			if err := s.call("update_search_index", map[string]any{"site": "sdd"}, &out); err != nil {
				return "", err
			}
			if out.Pages != 2 || out.Entries == 0 {
				return "", fmt.Errorf("indexed %d pages with %d entries; want the 2 chapters", out.Pages, out.Entries)
			}
			return fmt.Sprintf("%s: %d pages, %d entries", out.Path, out.Pages, out.Entries), nil
		}},
		{"validate_sdd_consistency", func() (string, error) {
			var out validation
			if err := s.call("validate_sdd_consistency", map[string]any{}, &out); err != nil {
				return "", err
			}
			if len(out.Errors) > 0 {
				return "", fmt.Errorf("%d errors, first: %+v", len(out.Errors), out.Errors[0])
			}
			n := 0
			for _, u := range r.prdUnits {
				n += len(u)
			}
			return fmt.Sprintf("ok: %d PRD units referenced, contract todo referenced and hashed, %d warnings", n, len(out.Warnings)), nil
		}},
	}
}

func (r *runner) writeSDDChapter(s *agentSession, id, body string) (string, error) {
	var out writeResult
	if err := s.call("write_chapter", map[string]any{"site": "sdd", "chapter_id": id, "html": body}, &out); err != nil {
		return "", err
	}
	if len(out.Units) == 0 {
		return "", errors.New("no units written")
	}
	r.artifact(out.Path)
	return fmt.Sprintf("%s, units %s", out.Path, strings.Join(out.unitIDs(), " ")), nil
}

// endpointRows renders the contract's endpoints as table rows, so the SDD
// shows the contract the Coder bridges.
func endpointRows() (string, error) {
	var c struct {
		Endpoints []struct {
			ID     string `json:"id"`
			Method string `json:"method"`
			Path   string `json:"path"`
			Status int    `json:"status"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(contractJSON, &c); err != nil {
		return "", fmt.Errorf("embedded contract: %w", err)
	}
	var b strings.Builder
	for _, e := range c.Endpoints {
		fmt.Fprintf(&b, "<tr><td>%s</td><td><code>%s %s</code></td><td>%d</td></tr>", html.EscapeString(e.ID), e.Method, html.EscapeString(e.Path), e.Status)
	}
	return b.String(), nil
}

// The guard's two commands: inline JSON (blocked) and the same request
// with the JSON in a file (allowed).
const (
	guardBlocked = `curl -X POST -d '{"title":"x"}' http://127.0.0.1:1/todos`
	guardAllowed = `echo '{"title":"x"}' > "$TMPDIR/x.json" && curl -X POST -d @"$TMPDIR/x.json" http://127.0.0.1:1/todos`
)

func (r *runner) coderSteps(s *agentSession) []step {
	bridge := func(lang string, extra map[string]any) (string, error) {
		args := map[string]any{"contract": "todo", "lang": lang}
		maps.Copy(args, extra)
		var out struct {
			Files  []string `json:"files"`
			SHA256 string   `json:"sha256"`
			Types  int      `json:"types"`
			Routes int      `json:"routes"`
		}
		if err := s.call("contract_bridge", args, &out); err != nil {
			return "", err
		}
		if out.SHA256 != r.contractSHA {
			return "", fmt.Errorf("generated from contract sha256 %s, but hash_contract recorded %s", out.SHA256, r.contractSHA)
		}
		if len(out.Files) != 1 || !strings.HasPrefix(out.Files[0], "units/"+unitID+"/") {
			return "", fmt.Errorf("files %v; want one file under units/%s/", out.Files, unitID)
		}
		r.artifact(out.Files...)
		return fmt.Sprintf("%s: %d types, %d routes, header sha256 matches hash_contract", out.Files[0], out.Types, out.Routes), nil
	}
	return []step{
		{"contract_bridge ts", func() (string, error) { return bridge("ts", nil) }},
		{"contract_bridge go", func() (string, error) { return bridge("go", map[string]any{"package": "demo"}) }},
		{"CLI Write", func() (string, error) {
			rel := "units/" + unitID + "/src/server.go"
			if err := r.cliWrite(s.ctx, "coder", rel, unitSource); err != nil {
				return "", err
			}
			r.artifact(rel)
			return rel + " (the source of `toolhost demo-unit`), allowed by the PreToolUse hook", nil
		}},
		{"append_coder_log", func() (string, error) {
			var out struct {
				Path string `json:"path"`
			}
			err := s.call("append_coder_log", map[string]any{
				"kind":    "implement",
				"message": "todo API on net/http: health, list, create, get, update; generated contract types in TS and Go",
				"files":   []string{"units/" + unitID + "/src/server.go"},
			}, &out)
			if err != nil {
				return "", err
			}
			r.artifact(out.Path)
			return out.Path, nil
		}},
		{"refused as expected (policy):", func() (string, error) {
			msg, err := s.refused("policy", "write_chapter", map[string]any{"site": "prd", "chapter_id": "stories", "html": section("Hack", "<p>The coder edits the PRD.</p>")},
				"tool write_chapter is not allowed for agent devloop-coder")
			return firstLine(msg), err
		}},
		{"refused as expected (guard):", func() (string, error) {
			code, stderr, err := r.guard(s.ctx, guardBlocked)
			if err != nil {
				return "", err
			}
			if code != 2 || !strings.Contains(stderr, "Bash guard: blocked inline JSON") {
				return "", fmt.Errorf("toolhost guard %q exited %d (want 2) with %q", guardBlocked, code, stderr)
			}
			r.sum.Refused = append(r.sum.Refused, Refusal{Agent: "coder", Gate: "guard", Message: strings.TrimPrefix(strings.TrimSpace(stderr), "toolhost: ")})
			return "toolhost guard exit 2: " + firstSentence(stderr), nil
		}},
		{"guard allows file form", func() (string, error) {
			code, stderr, err := r.guard(s.ctx, guardAllowed)
			if err != nil {
				return "", err
			}
			if code != 0 {
				return "", fmt.Errorf("toolhost guard %q exited %d (want 0): %s", guardAllowed, code, stderr)
			}
			return "exit 0: " + guardAllowed, nil
		}},
	}
}

const reportPath = "reports/vitest-todo.json"

func (r *runner) testerSteps(s *agentSession) []step {
	return []step{
		{"CLI Write", func() (string, error) {
			if err := r.cliWrite(s.ctx, "tester", reportPath, vitestReport); err != nil {
				return "", err
			}
			r.artifact(reportPath)
			return reportPath + " (a real `vitest run --reporter=json` report), allowed by the PreToolUse hook", nil
		}},
		{"parse_vitest", func() (string, error) {
			var out struct {
				Total       int             `json:"total"`
				Passed      int             `json:"passed"`
				Failed      int             `json:"failed"`
				Skipped     int             `json:"skipped"`
				SuiteErrors int             `json:"suite_errors"`
				Failures    []vitestFailure `json:"failures"`
			}
			if err := s.call("parse_vitest", map[string]any{"report_path": reportPath}, &out); err != nil {
				return "", err
			}
			for _, f := range out.Failures {
				switch {
				case f.Name != "":
					r.failures = append(r.failures, f)
				case f.Level == "hook" && strings.Contains(f.Message, "ECONNREFUSED"):
					r.hookFailure = f
				}
			}
			if out.Failed < 2 || len(r.failures) < 2 || r.hookFailure.File == "" {
				return "", fmt.Errorf("%d failed tests (%d named failures, hook failure %+v); the report has 8 and a beforeAll that cannot connect", out.Failed, len(r.failures), r.hookFailure)
			}
			return fmt.Sprintf("%d tests: %d passed, %d failed, %d skipped, %d file-level failures", out.Total, out.Passed, out.Failed, out.Skipped, out.SuiteErrors), nil
		}},
		{"hint_builder", func() (string, error) {
			var out struct {
				Hints []struct {
					Hint string `json:"hint"`
				} `json:"hints"`
			}
			if err := s.call("hint_builder", map[string]any{"report_path": reportPath, "max_hints": 5}, &out); err != nil {
				return "", err
			}
			if len(out.Hints) == 0 {
				return "", errors.New("no hints for a report with failures")
			}
			return fmt.Sprintf("%d hints, first: %s", len(out.Hints), clip(out.Hints[0].Hint, 90)), nil
		}},
		{"bug_open ×2", func() (string, error) {
			for _, f := range r.failures[:2] {
				out, err := r.openTestBug(s, f)
				if err != nil {
					return "", err
				}
				if out.Duplicate || out.Status != "open" {
					return "", fmt.Errorf("%s: duplicate %v, status %q; want a new open bug", out.ID, out.Duplicate, out.Status)
				}
				r.testerBugs = append(r.testerBugs, out.ID)
				r.sum.Bugs = append(r.sum.Bugs, out.ID)
				r.artifact(out.Path)
			}
			if r.testerBugs[0] == r.testerBugs[1] {
				return "", fmt.Errorf("two different failures got the same id %s", r.testerBugs[0])
			}
			return strings.Join(r.testerBugs, ", ") + " opened with test, test_file and report as evidence", nil
		}},
		{"bug_open file-level", func() (string, error) {
			// A failure outside any test: the test file and the report are
			// the evidence, there is no test name to cite.
			f := r.hookFailure
			var out bugOpened
			err := s.call("bug_open", map[string]any{
				"title":    clip(path.Base(f.File)+": beforeAll fails: "+f.Message, 300),
				"severity": "blocker",
				"evidence": map[string]any{"test_file": f.File, "report": reportPath},
			}, &out)
			if err != nil {
				return "", err
			}
			if out.Duplicate || out.Status != "open" {
				return "", fmt.Errorf("%s: duplicate %v, status %q; want a new open bug", out.ID, out.Duplicate, out.Status)
			}
			r.hookBug = out.ID
			r.sum.Bugs = append(r.sum.Bugs, out.ID)
			r.artifact(out.Path)
			return fmt.Sprintf("%s opened for %s (%s) with test_file and report as evidence", out.ID, path.Base(f.File), f.Message), nil
		}},
		{"bug_open again", func() (string, error) {
			out, err := r.openTestBug(s, r.failures[0])
			if err != nil {
				return "", err
			}
			if !out.Duplicate || out.ID != r.testerBugs[0] {
				return "", fmt.Errorf("id %s duplicate %v; want %s with duplicate: true", out.ID, out.Duplicate, r.testerBugs[0])
			}
			return fmt.Sprintf("duplicate: true → %s (same fingerprint)", out.ID), nil
		}},
		{"bug_list", func() (string, error) {
			var out struct {
				Total int `json:"total"`
				Bugs  []struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				} `json:"bugs"`
			}
			if err := s.call("bug_list", map[string]any{"status": "open"}, &out); err != nil {
				return "", err
			}
			if out.Total != 3 {
				return "", fmt.Errorf("%d open bugs, want 3", out.Total)
			}
			return fmt.Sprintf("%d open bugs", out.Total), nil
		}},
	}
}

func (r *runner) openTestBug(s *agentSession, f vitestFailure) (bugOpened, error) {
	var out bugOpened
	err := s.call("bug_open", map[string]any{
		"title":    clip(f.Name+": "+f.Message, 300),
		"severity": "major",
		"evidence": map[string]any{"test": f.Name, "test_file": f.File, "report": reportPath},
	}, &out)
	return out, err
}

func (r *runner) integratorSteps(s *agentSession) []step {
	return []step{
		{"port_picker", func() (string, error) {
			var out struct {
				Ports map[string]int `json:"ports"`
				Path  string         `json:"path"`
			}
			if err := s.call("port_picker", map[string]any{"units": []string{unitID}}, &out); err != nil {
				return "", err
			}
			if out.Ports[unitID] <= 0 {
				return "", fmt.Errorf("no port for %s in %v", unitID, out.Ports)
			}
			r.unit.port = out.Ports[unitID]
			return fmt.Sprintf("%s → 127.0.0.1:%d, reserved in %s", unitID, r.unit.port, out.Path), nil
		}},
		{"spawn_units start", func() (string, error) {
			u, err := spawn(s, "start", map[string]any{"id": unitID, "argv": []string{r.o.Bin, "demo-unit"}})
			if err != nil {
				return "", err
			}
			if u.State != "running" || u.PID <= 0 || u.Port != r.unit.port {
				return "", fmt.Errorf("unit %s is %s (pid %d, port %d, error %q); want running on port %d", unitID, u.State, u.PID, u.Port, u.Error, r.unit.port)
			}
			r.unit.pgid = u.PGID
			r.artifact(u.StdoutLog, u.StderrLog)
			return fmt.Sprintf("`toolhost demo-unit` running, pid %d in its own process group, PORT=%d", u.PID, u.Port), nil
		}},
		{"health_wait", func() (string, error) {
			var out struct {
				Targets []struct {
					Ready     bool   `json:"ready"`
					Status    int    `json:"status"`
					Attempts  int    `json:"attempts"`
					ElapsedMS int    `json:"elapsed_ms"`
					Error     string `json:"error"`
				} `json:"targets"`
			}
			url := fmt.Sprintf("http://127.0.0.1:%d/health", r.unit.port)
			err := s.callLong("health_wait", map[string]any{"targets": []map[string]any{{"unit": unitID, "url": url}}, "timeout_ms": 15000, "interval_ms": 100}, &out, true)
			if err != nil {
				return "", err
			}
			if len(out.Targets) != 1 || !out.Targets[0].Ready {
				return "", fmt.Errorf("%s not ready: %+v", url, out.Targets)
			}
			t := out.Targets[0]
			return fmt.Sprintf("GET %s → %d after %s, %d ms", url, t.Status, plural(t.Attempts, "attempt"), t.ElapsedMS), nil
		}},
		{"run_case", func() (string, error) { return r.runCase(s) }},
		{"collect_stderr", func() (string, error) {
			var out struct {
				Units []struct {
					Unit       string `json:"unit"`
					Path       string `json:"path"`
					Exists     bool   `json:"exists"`
					TotalLines int    `json:"total_lines"`
					Signatures []struct {
						Kind string `json:"kind"`
					} `json:"signatures"`
				} `json:"units"`
			}
			if err := s.call("collect_stderr", map[string]any{"units": []string{unitID}, "tail_lines": 20}, &out); err != nil {
				return "", err
			}
			if len(out.Units) != 1 || !out.Units[0].Exists {
				return "", fmt.Errorf("no stderr log for %s: %+v", unitID, out.Units)
			}
			u := out.Units[0]
			return fmt.Sprintf("%s: %s, %d error signatures", u.Path, plural(u.TotalLines, "line"), len(u.Signatures)), nil
		}},
		{"bug_open", func() (string, error) {
			var out bugOpened
			err := s.call("bug_open", map[string]any{
				"title":    "DELETE /todos/{id} answers 405 where the contract promises 204",
				"unit_id":  unitID,
				"severity": "major",
				"evidence": map[string]any{
					"run_id": r.unit.runID,
					"repro":  fmt.Sprintf("POST /todos {\"title\": \"write the demo\"} → 201 with an id; DELETE /todos/<id> → 405, contract todo (delete-todo) says 204. Run %s.", r.unit.runID),
				},
			}, &out)
			if err != nil {
				return "", err
			}
			if out.Duplicate {
				return "", fmt.Errorf("%s reported as a duplicate of an earlier bug", out.ID)
			}
			r.deleteBug = out.ID
			r.sum.Bugs = append(r.sum.Bugs, out.ID)
			r.artifact(out.Path)
			return fmt.Sprintf("%s cites run %s", out.ID, r.unit.runID), nil
		}},
		{"spawn_units stop", func() (string, error) {
			u, err := spawn(s, "stop", map[string]any{"id": unitID})
			if err != nil {
				return "", err
			}
			if u.State != "stopped" {
				return "", fmt.Errorf("unit %s is %s after stop, want stopped", unitID, u.State)
			}
			// The unit must not outlive its stop: no process of its group
			// may be left.
			if err := syscall.Kill(-r.unit.pgid, 0); !errors.Is(err, syscall.ESRCH) {
				return "", fmt.Errorf("process group %d of the unit is still there after stop (kill 0: %v)", r.unit.pgid, err)
			}
			sig := ""
			if u.Stop != nil && u.Stop.Signal != "" {
				sig = " by " + u.Stop.Signal
			}
			return fmt.Sprintf("state stopped%s, process group %d gone", sig, r.unit.pgid), nil
		}},
	}
}

type unitState struct {
	State     string `json:"state"`
	PID       int    `json:"pid"`
	PGID      int    `json:"pgid"`
	Port      int    `json:"port"`
	StdoutLog string `json:"stdout_log"`
	StderrLog string `json:"stderr_log"`
	Error     string `json:"error"`
	Stop      *struct {
		Signal string `json:"signal"`
	} `json:"stop"`
}

// spawn runs spawn_units for the one unit and returns its state.
func spawn(s *agentSession, action string, unit map[string]any) (unitState, error) {
	var out struct {
		Units []unitState `json:"units"`
	}
	if err := s.callLong("spawn_units", map[string]any{"action": action, "units": []map[string]any{unit}}, &out, true); err != nil {
		return unitState{}, err
	}
	if len(out.Units) != 1 {
		return unitState{}, fmt.Errorf("%d units in the result, want 1", len(out.Units))
	}
	return out.Units[0], nil
}

// runCase drives create → get → delete against the unit. The delete must
// fail with a status diff: the unit lacks the route the contract promises.
func (r *runner) runCase(s *agentSession) (string, error) {
	base := "http://127.0.0.1:{{port:" + unitID + "}}/todos"
	tc := map[string]any{
		"id": "todo-crud",
		"steps": []map[string]any{
			{"name": "create", "method": "POST", "url": base, "body": map[string]any{"title": "write the demo"},
				"expect": map[string]any{"status": 201}, "capture": map[string]any{"id": "/id"}},
			{"name": "get", "method": "GET", "url": base + "/{{var:id}}",
				"expect": map[string]any{"status": 200, "json_subset": map[string]any{"id": "{{var:id}}", "title": "write the demo", "done": false}}},
			{"name": "delete", "method": "DELETE", "url": base + "/{{var:id}}", "expect": map[string]any{"status": 204}},
		},
	}
	var out struct {
		RunID  string `json:"run_id"`
		Path   string `json:"path"`
		Passed int    `json:"passed"`
		Failed int    `json:"failed"`
		Steps  []struct {
			Name     string         `json:"name"`
			OK       bool           `json:"ok"`
			Status   int            `json:"status"`
			Captured map[string]any `json:"captured"`
			Diff     []struct {
				Check    string `json:"check"`
				Expected any    `json:"expected"`
				Actual   any    `json:"actual"`
				Message  string `json:"message"`
			} `json:"diff"`
		} `json:"steps"`
	}
	st, err := s.result("run_case", map[string]any{"case": tc}, &out, true)
	if err != nil {
		return "", err
	}
	if st.OK || out.Passed != 2 || out.Failed != 1 || len(out.Steps) != 3 || out.RunID == "" {
		return "", fmt.Errorf("want create and get to pass and delete to fail: ok %v, %d passed, %d failed, run %q (%s)", st.OK, out.Passed, out.Failed, out.RunID, st.Reason)
	}
	id := out.Steps[0].Captured["id"]
	del := out.Steps[2]
	if id == nil || del.OK || del.Status != 405 || len(del.Diff) == 0 || del.Diff[0].Check != "status" {
		return "", fmt.Errorf("want the captured id and a status diff on delete (405 vs 204): id %v, delete %+v", id, del)
	}
	r.unit.runID = out.RunID
	r.sum.RunFile = out.Path
	r.artifact(out.Path)
	return fmt.Sprintf("create 201 (id %v), get 200, delete ✗ %s; stored %s", id, del.Diff[0].Message, path.Base(out.Path)), nil
}

func (r *runner) triagerSteps(s *agentSession) []step {
	return []step{
		{"extract_evidence", func() (string, error) {
			var out evidenceResult
			if err := s.call("extract_evidence", map[string]any{"bug_id": r.deleteBug}, &out); err != nil {
				return "", err
			}
			if out.EvidenceStatus != "verified" || len(out.Missing) > 0 {
				return "", fmt.Errorf("evidence %s, missing %+v; the run %s exists", out.EvidenceStatus, out.Missing, r.unit.runID)
			}
			kinds := make([]string, len(out.Verified))
			for i, v := range out.Verified {
				kinds[i] = v.Kind
			}
			r.artifact(out.Path, "triage/triage.json")
			return fmt.Sprintf("%s: verified (%s) → %s", r.deleteBug, strings.Join(kinds, ", "), out.Path), nil
		}},
		{"category_classifier", func() (string, error) {
			var out classifyResult
			if err := s.call("category_classifier", map[string]any{"bug_id": r.deleteBug}, &out); err != nil {
				return "", err
			}
			if out.Category != "contract_mismatch" {
				return "", fmt.Errorf("category %s (confidence %.2f, signals %+v); a 405 where the contract says 204 is contract_mismatch", out.Category, out.Confidence, out.Signals)
			}
			rules := make([]string, 0, len(out.Signals))
			for _, sg := range out.Signals {
				rules = append(rules, sg.Rule+"@"+sg.Where)
			}
			return fmt.Sprintf("%s, confidence %.2f (%s)", out.Category, out.Confidence, clip(strings.Join(rules, ", "), 80)), nil
		}},
		{"extract_evidence hook", func() (string, error) {
			var out evidenceResult
			if err := s.call("extract_evidence", map[string]any{"bug_id": r.hookBug}, &out); err != nil {
				return "", err
			}
			if out.EvidenceStatus != "verified" || len(out.Verified) == 0 || !strings.Contains(out.Verified[0].Excerpt, "ECONNREFUSED") {
				return "", fmt.Errorf("evidence %s, verified %+v, missing %+v; the report has the file's beforeAll failure", out.EvidenceStatus, out.Verified, out.Missing)
			}
			return fmt.Sprintf("%s: verified, the failing beforeAll of %s in %s", r.hookBug, path.Base(r.hookFailure.File), reportPath), nil
		}},
		{"category_classifier hook", func() (string, error) {
			var out classifyResult
			if err := s.call("category_classifier", map[string]any{"bug_id": r.hookBug}, &out); err != nil {
				return "", err
			}
			if out.Category != "env_config" || len(out.Signals) == 0 {
				return "", fmt.Errorf("category %s (confidence %.2f, signals %+v); a beforeAll that cannot connect is env_config", out.Category, out.Confidence, out.Signals)
			}
			return fmt.Sprintf("%s, confidence %.2f (%s@%s: %s)", out.Category, out.Confidence, out.Signals[0].Rule, out.Signals[0].Where, out.Signals[0].Excerpt), nil
		}},
		{"diff_contract_vs_impl", func() (string, error) {
			var out struct {
				FilesScanned int     `json:"files_scanned"`
				Matched      []route `json:"matched"`
				Missing      []route `json:"missing"`
				Extra        []route `json:"extra"`
			}
			if err := s.call("diff_contract_vs_impl", map[string]any{"contract": "todo", "unit_id": unitID}, &out); err != nil {
				return "", err
			}
			if len(out.Missing) != 1 || out.Missing[0].Method != "DELETE" || len(out.Matched) != 5 {
				return "", fmt.Errorf("matched %d, missing %+v; want 5 matched and DELETE /todos/{id} missing", len(out.Matched), out.Missing)
			}
			return fmt.Sprintf("%d files, %d routes matched, missing %s %s", out.FilesScanned, len(out.Matched), out.Missing[0].Method, out.Missing[0].Path), nil
		}},
		{"find_similar_bug", func() (string, error) {
			var out struct {
				Similar []struct {
					BugID string  `json:"bug_id"`
					Score float64 `json:"score"`
				} `json:"similar"`
				Index struct {
					Bugs int `json:"bugs"`
				} `json:"index"`
			}
			if err := s.call("find_similar_bug", map[string]any{"bug_id": r.deleteBug, "top_k": 3}, &out); err != nil {
				return "", err
			}
			if out.Index.Bugs != len(r.sum.Bugs) {
				return "", fmt.Errorf("index holds %d bugs, %d were opened", out.Index.Bugs, len(r.sum.Bugs))
			}
			for _, sm := range out.Similar {
				if sm.BugID == r.deleteBug {
					return "", errors.New("the bug is listed as similar to itself")
				}
			}
			if len(out.Similar) == 0 {
				return fmt.Sprintf("%d bugs indexed, none shares a term: a new problem", out.Index.Bugs), nil
			}
			return fmt.Sprintf("%d bugs indexed, closest %s (score %.2f)", out.Index.Bugs, out.Similar[0].BugID, out.Similar[0].Score), nil
		}},
		{"bug_transition", func() (string, error) {
			var out struct {
				From string `json:"from"`
				To   string `json:"to"`
			}
			err := s.call("bug_transition", map[string]any{"id": r.deleteBug, "to": "triaged",
				"note": "contract_mismatch: the unit has no DELETE /todos/{id} route; the contract promises 204"}, &out)
			if err != nil {
				return "", err
			}
			if out.From != "open" || out.To != "triaged" {
				return "", fmt.Errorf("%s → %s, want open → triaged", out.From, out.To)
			}
			return fmt.Sprintf("%s open → triaged", r.deleteBug), nil
		}},
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// firstSentence is the guard's verdict without its explanation (and
// without the "toolhost: " the command puts before its errors).
func firstSentence(s string) string {
	line := strings.TrimPrefix(firstLine(s), "toolhost: ")
	if i := strings.Index(line, ". "); i > 0 {
		return line[:i]
	}
	return line
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func exists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
