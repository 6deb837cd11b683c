package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/stdioclient"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/tools/devloop/docs"
	"github.com/toolhost/toolhost/internal/tools/devloop/persist"
	"github.com/toolhost/toolhost/internal/tools/devloop/tester"
)

// BenchmarkScale is the scaling table: one tool per row, each timed
// through the real binary (a tools/call over stdio, the whole gate and an
// audit row included) on a project of three sizes, with the target that
// the cost grows at most linearly with the work. Per row and size it
// reports the median wall time of scaleCalls calls (ms@<size>) and the
// server's CPU time per call (cpu-ms@<size>); the log line adds the CPU
// time per unit of work and the growth exponent of the CPU time between
// consecutive sizes (log of the time ratio over log of the size ratio: 1
// is linear, below 1 is the fixed cost of a call still showing), and
// growth-exp is the one from the smallest to the largest size:
//
//	go test -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -timeout 60m ./internal/e2e
//
// TOOLHOST_BENCH_PROFILES=dir writes a CPU profile of each session there
// (<tool>-<size>.prof).
//
// Each size's project lives in its own temporary directory, removed before
// the next size is built.
func BenchmarkScale(b *testing.B) {
	for _, row := range scaleRows {
		b.Run(row.tool, func(b *testing.B) {
			for b.Loop() {
				var wall, cpu []float64
				for _, n := range row.sizes {
					w, c := scaleSize(b, row, n)
					wall, cpu = append(wall, w), append(cpu, c)
					// Each size as it is measured: a long row's figures
					// survive a stopped run.
					fmt.Fprintf(os.Stderr, "%s at %d %s: %.4g ms wall, %.4g ms CPU\n", row.tool, n, row.unit, w, c)
				}
				reportScale(b, row.tool, row.unit, row.sizes, wall, cpu)
			}
		})
	}
}

// scaleCalls is how many timed calls each size runs (after one untimed
// call that warms the session's caches, as an agent's earlier calls do).
const scaleCalls = 5

// scaleRow is one row of the table: the tool, the agent that has it, what
// a size counts, the sizes, and how to build a project of size n in dir.
type scaleRow struct {
	tool, agent, unit string
	sizes             []int
	setup             func(b *testing.B, dir string, n int) scaleCall
}

// scaleCall is the call a row times on a project.
type scaleCall struct {
	args  map[string]any
	check func(b *testing.B, out json.RawMessage)
	// before, when set, runs untimed before each call (the i-th).
	before func(i int)
}

var scaleRows = []scaleRow{
	{"validate_prd_site", "pm", "pages", []int{200, 2000, 10000}, prdSite},
	{"diff_contract_vs_impl", "bug-triager", "routes", []int{50, 500, 2000}, expressApp},
	{"parse_vitest", "tester", "tests", []int{1000, 10000, 50000}, vitestReport(1)},
	// A 1,000-test report's result fits one page.
	{"parse_vitest_page_2", "tester", "tests", []int{5000, 10000, 50000}, vitestReport(2)},
	{"find_similar_bug", "bug-triager", "bugs", []int{1000, 10000, 50000}, bugCorpus},
	{"update_todo_item", "pm", "steps", []int{10, 100, 500}, todolist},
}

// scaleSize builds row's project at size n, starts a session on it and
// returns the median wall milliseconds of a call and the server's CPU
// milliseconds per call (the figure a loaded machine does not blur).
func scaleSize(b *testing.B, row scaleRow, n int) (wall, cpu float64) {
	dir, err := os.MkdirTemp("", "toolhost-scale-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sc := row.setup(b, dir, n)
	name := strings.TrimSuffix(row.tool, "_page_2")
	argv := []string{"serve", "--agent", row.agent, "--project-dir", dir, "--log-level", "warn"}
	if pd := os.Getenv("TOOLHOST_BENCH_PROFILES"); pd != "" {
		argv = append(argv, "--cpuprofile", filepath.Join(pd, fmt.Sprintf("%s-%d.prof", row.tool, n)))
	}
	c, err := stdioclient.Start(testutil.Toolhost(b), argv, withoutTelemetry(os.Environ()))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close(20 * time.Second) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, "2025-06-18", nil); err != nil {
		b.Fatalf("initialize: %v\n%s", err, c.Stderr())
	}
	call := func() {
		r, err := c.CallTool(ctx, name, sc.args, nil)
		if err != nil {
			b.Fatalf("%s at %d: %v\n%s", name, n, err, c.Stderr())
		}
		if r.IsError {
			b.Fatalf("%s at %d: %s", name, n, r.Text())
		}
		sc.check(b, r.StructuredContent)
	}
	if sc.before != nil {
		sc.before(0)
	}
	call()
	pid := c.Process().Group().LeaderPID
	cpu0 := processCPUTime(b, pid)
	var ms []float64
	for i := range scaleCalls {
		if sc.before != nil {
			sc.before(i + 1)
		}
		start := time.Now()
		call()
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	return medianF(ms), float64((processCPUTime(b, pid) - cpu0).Microseconds()) / 1000 / scaleCalls
}

// processCPUTime is the CPU time the threads of process pid have run, in
// nanoseconds (the first field of each task's schedstat).
func processCPUTime(b *testing.B, pid int) time.Duration {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("no tasks of %d: %v", pid, err)
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		var ns int64
		if _, err := fmt.Sscan(string(data), &ns); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}

// reportScale reports a row: ms@<size> (wall) and cpu-ms@<size> per size,
// the growth exponent of the CPU time from the smallest to the largest size
// (growth-exp), and in the log the CPU time per unit of work at each size
// and the exponent between each two.
func reportScale(b *testing.B, name, unit string, sizes []int, wall, cpu []float64) {
	line := fmt.Sprintf("%s:", name)
	for i, n := range sizes {
		b.ReportMetric(wall[i], fmt.Sprintf("ms@%d", n))
		b.ReportMetric(cpu[i], fmt.Sprintf("cpu-ms@%d", n))
		line += fmt.Sprintf(" %d %s %.4g ms wall, %.4g ms CPU (%.3g µs/%s)", n, unit, wall[i], cpu[i], cpu[i]*1000/float64(n), strings.TrimSuffix(unit, "s"))
		if i > 0 {
			line += fmt.Sprintf(" [exp %.2f]", growth(sizes[i-1], sizes[i], cpu[i-1], cpu[i]))
		}
		line += ";"
	}
	last := len(sizes) - 1
	b.ReportMetric(growth(sizes[0], sizes[last], cpu[0], cpu[last]), "growth-exp")
	b.Log(strings.TrimSuffix(line, ";"))
}

// growth is the exponent k of t ∝ n^k between two sizes.
func growth(n1, n2 int, t1, t2 float64) float64 {
	return math.Log(t2/t1) / math.Log(float64(n2)/float64(n1))
}

// expectOK returns a check that the result is ok and passes more.
func expectOK[T any](more func(b *testing.B, out T)) func(b *testing.B, raw json.RawMessage) {
	return func(b *testing.B, raw json.RawMessage) {
		var out T
		var st struct {
			OK bool `json:"ok"`
		}
		if json.Unmarshal(raw, &st) != nil || !st.OK || json.Unmarshal(raw, &out) != nil {
			b.Fatalf("result %.300s", raw)
		}
		if more != nil {
			more(b, out)
		}
	}
}

// inProcess calls tools in-process on dir as agent does, past their input
// schemas: how a benchmark builds a large project in seconds with the
// tools' own layout.
func inProcess(b *testing.B, dir, agent string) func(tl tool.Tool, args any) {
	c := testutil.NewCtx(b, testutil.CtxOptions{Agent: agent, Dir: dir})
	return func(tl tool.Tool, args any) {
		raw, _ := json.Marshal(args)
		r, err := tl.Call(context.Background(), c, raw)
		if err != nil || !strings.Contains(string(r.Structured), `"ok":true`) {
			b.Fatalf("%s: %v %.300s", tool.NameOf(tl), err, r.Structured)
		}
	}
}

// prdSite is a PRD site of n pages (its index and n-1 chapters of five
// units linking to the next chapter, as BenchmarkSite200 in
// internal/tools/devloop/docs builds them). bootstrap_prd_site takes at
// most 1,000 chapters from a client, so the site is built in-process.
func prdSite(b *testing.B, dir string, n int) scaleCall {
	call := inProcess(b, dir, "pm")
	chapters := n - 1
	var chs []map[string]string
	for i := range chapters {
		chs = append(chs, map[string]string{"id": fmt.Sprintf("ch-%05d", i), "title": fmt.Sprintf("Chapter %d", i)})
	}
	call(docs.BootstrapPRDSite(), map[string]any{"title": "Big PRD", "chapters": chs})
	write := docs.WriteChapter()
	for i := range chapters {
		var body strings.Builder
		for u := range 5 {
			fmt.Fprintf(&body, `<section><h2>Requirement %d.%d</h2><p>The system shall do thing %d of chapter %d, see <a href="ch-%05d.html">the next chapter</a>.</p><ul><li>detail one</li><li>detail two</li></ul></section>`, i, u, u, i, (i+1)%chapters)
		}
		call(write, map[string]any{"site": "prd", "chapter_id": fmt.Sprintf("ch-%05d", i), "html": body.String()})
	}
	call(docs.UpdateSearchIndex(), map[string]any{"site": "prd"})
	return scaleCall{args: map[string]any{}, check: expectOK(func(b *testing.B, out struct {
		Pages int `json:"pages"`
	}) {
		if out.Pages != n {
			b.Fatalf("validated %d pages, want %d", out.Pages, n)
		}
	})}
}

// routesPerRouter is how many routes each router file of expressApp holds.
const routesPerRouter = 50

// expressApp is an Express unit of n routes in routers of 50 routes, each
// its own file mounted by app.js under its prefix, against a contract
// that declares them all but the last of every router and one the unit
// does not serve per router (so missing and extra are not empty).
func expressApp(b *testing.B, dir string, n int) scaleCall {
	files := map[string]string{}
	var app strings.Builder
	app.WriteString("const express = require('express');\nconst app = express();\napp.use(express.json());\n")
	var eps []string
	methods := []string{"get", "post", "put", "delete"}
	for r := 0; r*routesPerRouter < n; r++ {
		var src strings.Builder
		src.WriteString("const express = require('express');\nconst router = express.Router();\n")
		for j := 0; j < routesPerRouter && r*routesPerRouter+j < n; j++ {
			m := methods[j%len(methods)]
			fmt.Fprintf(&src, "router.%s('/items%d/:id', (req, res) => res.json({ id: req.params.id }));\n", m, j)
			if j < routesPerRouter-1 {
				eps = append(eps, fmt.Sprintf(`{"id":"e%d-%d","method":%q,"path":"/r%d/items%d/{id}","status":200,"response":{}}`, r, j, strings.ToUpper(m), r, j))
			}
		}
		eps = append(eps, fmt.Sprintf(`{"id":"x%d","method":"GET","path":"/r%d/absent","status":200,"response":{}}`, r, r))
		src.WriteString("module.exports = router;\n")
		files[fmt.Sprintf("units/api/src/routes/r%d.js", r)] = src.String()
		fmt.Fprintf(&app, "app.use('/r%d', require('./routes/r%d'));\n", r, r)
	}
	app.WriteString("app.listen(process.env.PORT || 3000);\n")
	files["units/api/src/app.js"] = app.String()
	files["contracts/api.json"] = `{"name":"api","version":"1","endpoints":[` + strings.Join(eps, ",") + `]}`
	writeFiles(b, dir, files)
	return scaleCall{args: map[string]any{"contract": "api", "unit_id": "api"}, check: expectOK(func(b *testing.B, out struct {
		RoutesFound int `json:"routes_found"`
	}) {
		if out.RoutesFound != n {
			b.Fatalf("found %d routes, want %d", out.RoutesFound, n)
		}
	})}
}

// vitestReport is a Vitest JSON report of n tests in files of 100, one in
// ten failed (three causes: an assertion on varying values, a TypeError
// thrown in the code under test, a timeout), read by report_path; page
// picks the result page timed. Page 1 is timed on a report rewritten
// before each call (a new run); a later page on the report page 1 read
// (an agent paging through one result).
func vitestReport(page int) func(b *testing.B, dir string, n int) scaleCall {
	return func(b *testing.B, dir string, n int) scaleCall {
		var files []any
		failed := 0
		for f := 0; f*100 < n; f++ {
			file := fmt.Sprintf("/p/units/api/test/f%04d.test.ts", f)
			var tests []any
			status := "passed"
			for i := f * 100; i < min(n, (f+1)*100); i++ {
				a := map[string]any{"ancestorTitles": []any{"api", fmt.Sprintf("suite %d", f)}, "title": fmt.Sprintf("case %d", i), "fullName": fmt.Sprintf("api suite %d case %d", f, i),
					"status": "passed", "duration": 1.5, "failureMessages": []any{}, "meta": map[string]any{}}
				if i%10 == 0 {
					failed++
					status = "failed"
					a["status"] = "failed"
					a["failureMessages"] = []any{[]string{
						fmt.Sprintf("AssertionError: expected %d to be %d // Object.is equality\n    at %s:%d:21", i, i+1, file, i%100+3),
						"TypeError: Cannot read properties of undefined (reading 'id')\n    at /p/units/api/src/orders.ts:42:17\n    at " + file + ":12:5",
						"Error: Test timed out in 5000ms.",
					}[(i/10)%3]}
				}
				tests = append(tests, a)
			}
			files = append(files, map[string]any{"name": file, "status": status, "message": "", "startTime": 1000, "endTime": 1100, "assertionResults": tests})
		}
		report := map[string]any{"numTotalTests": n, "startTime": 1000, "success": false, "testResults": files}
		write := func(i int) {
			report["startTime"] = 1000 + i // another run's report: same tests, new bytes
			data, err := json.Marshal(report)
			if err != nil {
				b.Fatal(err)
			}
			writeFiles(b, dir, map[string]string{"reports/run.json": string(data)})
		}
		write(0)
		sc := scaleCall{args: map[string]any{"report_path": "reports/run.json", "page": page}, check: expectOK(func(b *testing.B, out struct {
			Total, Failed int
		}) {
			if out.Total != n || out.Failed != failed {
				b.Fatalf("total %d failed %d, want %d and %d", out.Total, out.Failed, n, failed)
			}
		})}
		if page == 1 {
			// Page 1 is what a new run costs: a new report every call.
			sc.before = write
		}
		return sc
	}
}

// bugCorpus is the n bug files of testutil.BugCorpus (what
// BenchmarkFindSimilar5000 in internal/tools/devloop/triage searches); the call ranks the bugs like the
// first one (the warm-up call builds the cached index, as a session's
// first search does).
func bugCorpus(b *testing.B, dir string, n int) scaleCall {
	if err := os.MkdirAll(filepath.Join(dir, bugs.Dir), 0o755); err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, bug := range testutil.BugCorpus(n) {
		bug.UnitID, bug.Severity, bug.Status, bug.Fingerprint, bug.OpenedBy = "api", "minor", "open", fmt.Sprintf("fp-%d", i), "tester"
		bug.CreatedAt, bug.UpdatedAt, bug.History, bug.Evidence[0].AddedAt = at, at, []bugs.Transition{}, at
		data, _ := json.MarshalIndent(bug, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(bugs.Path(bug.ID))), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The store's index, as bug_open keeps it (without it every read
	// scans the bug files).
	inProcess(b, dir, "bug-triager")(tester.BugList(), map[string]any{"limit": 1})
	return scaleCall{args: map[string]any{"bug_id": bugs.FormatID(1), "top_k": 10}, check: expectOK(func(b *testing.B, out struct {
		Index struct {
			Bugs    int  `json:"bugs"`
			Rebuilt bool `json:"rebuilt"`
		} `json:"index"`
	}) {
		if out.Index.Bugs != n {
			b.Fatalf("index of %d bugs, want %d", out.Index.Bugs, n)
		}
	})}
}

// todolist is a todolist of n steps (descriptions of 100 characters, each
// step depending on the one before); the call moves the middle step
// between todo and blocked (the whole document is rewritten: SPEC §10).
func todolist(b *testing.B, dir string, n int) scaleCall {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("step-%03d", i+1), "description": strings.Repeat("d", 100)}
		if i > 0 {
			items[i]["depends_on"] = []string{fmt.Sprintf("step-%03d", i)}
		}
	}
	inProcess(b, dir, "pm")(persist.WriteTodolist(), map[string]any{"items": items})
	args := map[string]any{"id": fmt.Sprintf("step-%03d", n/2+1), "status": "blocked", "note": "n"}
	return scaleCall{args: args, check: func(b *testing.B, raw json.RawMessage) {
		expectOK[struct{}](nil)(b, raw)
		args["status"] = map[string]string{"blocked": "todo", "todo": "blocked"}[args["status"].(string)]
	}}
}

// writeFiles writes project-relative files under dir.
func writeFiles(b *testing.B, dir string, files map[string]string) {
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
