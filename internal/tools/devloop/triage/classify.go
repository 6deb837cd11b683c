package triage

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/lazyre"
	"github.com/toolhost/toolhost/internal/vitest"
)

// Categories, in the order ties are broken (the more specific first).
const (
	CatContractMismatch = "contract_mismatch"
	CatEnvConfig        = "env_config"
	CatDependency       = "dependency"
	CatFlaky            = "flaky"
	CatTestError        = "test_error"
	CatLogicError       = "logic_error"
	CatUnknown          = "unknown"
)

var categoryOrder = []string{CatContractMismatch, CatEnvConfig, CatDependency, CatFlaky, CatTestError, CatLogicError}

// recentReports is how many of the newest Vitest reports count as "recent"
// when looking for a test that both passed and failed.
const recentReports = 10

// source is one text the rules read, and where it was found.
type source struct {
	Where string
	Text  string
}

// facts is everything the rules may look at for one bug or text.
type facts struct {
	Sources []source
	// History holds, per cited test, its outcomes in the recent reports,
	// newest first.
	History map[citedTest][]testOutcome
	// Routes are the contracts' endpoints, for the 404-on-a-contract-route rule.
	Routes []contractRoute
}

// Signal is one rule that matched, and where.
type Signal struct {
	Rule     string  `json:"rule" jsonschema_description:"the rule's id in the classifier's table"`
	Category string  `json:"category" jsonschema_description:"the category the rule votes for"`
	Weight   float64 `json:"weight" jsonschema_description:"how strongly the rule votes (0-1)"`
	Where    string  `json:"where" jsonschema_description:"where the signal was found: title, evidence[i].log, a report or log path with line, text"`
	Excerpt  string  `json:"excerpt" jsonschema_description:"the matching text"`
}

// rule is one row of the classifier's table: either a Pattern matched
// against every source, or a Check over all the facts.
type rule struct {
	ID       string
	Category string
	Weight   float64
	Pattern  *regexp.Regexp
	Check    func(f *facts) []Signal
	// Near are words a text about this rule's cause tends to hold; when no
	// rule matches, the rule whose words the text holds most is named as the
	// closest signature.
	Near []string
}

// rules is THE classification table. To teach the classifier something new,
// add a row here and a case for it in TestEachRule. It is built (and its
// expressions compiled) on first use, not at every process start.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		{ID: "contract_status", Category: CatContractMismatch, Weight: 0.9, Near: []string{"status", "expected", "http"}, Pattern: regexp.MustCompile(
			`(?i)\bstatus(?: code)?\W{0,3}expected\D{0,12}\b([1-5]\d\d)\b\D{1,30}?\b(?:got|received|actual|but was)\b\D{0,5}([1-5]\d\d)\b` +
				`|\bexpected (?:http )?status (?:code )?([1-5]\d\d)\D{1,20}(?:got|received|but was)\D{0,5}([1-5]\d\d)\b` +
				`|\bexpected ([1-5]\d\d) "[A-Za-z ]+", got ([1-5]\d\d) "`)},
		{ID: "contract_field", Category: CatContractMismatch, Weight: 0.8, Near: []string{"field", "property", "schema", "contract"}, Pattern: regexp.MustCompile(
			`(?i)\bmissing (?:required )?(?:field|property|key)\b\s*\S+` +
				`|\b(?:field|property|key) \S+ (?:is missing|differs|mismatch(?:es)?|has type \w+)` +
				`|\bjson_subset\b|\bdoes not match (?:the )?contract\b|\bcontract mismatch\b|\bnot in (?:the )?contract\b`)},
		{ID: "contract_route_404", Category: CatContractMismatch, Weight: 0.9, Check: checkContract404},
		{ID: "contract_status_declared", Category: CatContractMismatch, Weight: 0.9, Check: checkDeclaredStatus},
		{ID: "assertion_expected_received", Category: CatLogicError, Weight: 0.7, Near: []string{"expected", "received", "assert"}, Pattern: regexp.MustCompile(
			`AssertionError\b|(?i)\bexpected .{1,200}? to (?:be|equal|deep(?:ly)? equal|strictly equal|have|contain|match|throw)\b` +
				`|(?m)^\s*Expected:?\s+.+\n\s*Received:?\s+`)},
		{ID: "eaddrinuse", Category: CatEnvConfig, Weight: 0.9, Near: []string{"port", "listen", "address"}, Pattern: regexp.MustCompile(`\bEADDRINUSE\b|(?i)\baddress already in use\b`)},
		{ID: "econnrefused", Category: CatEnvConfig, Weight: 0.8, Near: []string{"connect", "refused", "socket", "database", "econnreset", "hang up"}, Pattern: regexp.MustCompile(`\bECONNREFUSED\b|(?i)\bconnection refused\b`)},
		{ID: "missing_env_var", Category: CatEnvConfig, Weight: 0.8, Near: []string{"environment", "env", "variable", "config"}, Pattern: regexp.MustCompile(
			`(?i)\b(?:missing|undefined|unset|not set|required)\s+(?:the\s+)?(?:environment|env)\s+var(?:iable)?s?\b` +
				`|\b(?:environment|env)\s+var(?:iable)?\s+\S+\s+(?:is\s+)?(?:not set|missing|undefined|required)\b` +
				`|\bprocess\.env\.[A-Za-z_][A-Za-z0-9_]*\s+is\s+(?:undefined|not set|required|missing)\b`)},
		{ID: "permission_denied", Category: CatEnvConfig, Weight: 0.8, Near: []string{"permission", "denied", "access"}, Pattern: regexp.MustCompile(
			`\bEACCES\b|\bEPERM\b|(?i)\bpermission denied\b|\boperation not permitted\b`)},
		{ID: "passed_and_failed", Category: CatFlaky, Weight: 1.0, Check: checkFlaky},
		{ID: "syntax_error_in_test_file", Category: CatTestError, Weight: 0.8, Near: []string{"syntax", "parse", "transform", "unexpected"}, Check: syntaxErrorIn(true)},
		{ID: "syntax_error_in_source", Category: CatLogicError, Weight: 0.8, Near: []string{"syntax", "parse", "transform", "unexpected"}, Check: syntaxErrorIn(false)},
		{ID: "error_in_test_file", Category: CatTestError, Weight: 0.7, Check: checkTestError},
		// A package that is not installed is a dependency problem; a
		// project file that is not there (a relative import) is the code's.
		{ID: "module_not_found", Category: CatDependency, Weight: 0.9, Near: []string{"module", "package", "require", "import", "node_modules"}, Pattern: regexp.MustCompile(
			`Cannot find (?:module|package) ['"]?[^.\s'"/][^\s'"]*|Failed to (?:load|resolve) (?:url|import) [^.\s]|\bModule not found: (?:Error: )?Can't resolve '[^.]`)},
		{ID: "local_module_missing", Category: CatLogicError, Weight: 0.8, Near: []string{"module", "import", "resolve"}, Pattern: regexp.MustCompile(
			`Cannot find module ['"]?\.\.?/[^\s'"]*|Failed to (?:load|resolve) (?:url|import) \.\.?/\S+|Can't resolve '\.\.?/`)},
		{ID: "timeout", Category: CatFlaky, Weight: 0.5, Near: []string{"timeout", "slow", "deadline", "hang"}, Pattern: regexp.MustCompile(
			`(?i)\b(?:test|hook) timed out\b|\btimed out in \d+ ?ms\b|` + vitest.StackTraceMarker + `|\bexceeded timeout of \d+`)},
		// A crash of a compiled runtime: the program hit a bug (index out
		// of range, nil dereference, concurrent map writes, unwrap on None).
		{ID: "runtime_panic", Category: CatLogicError, Weight: 0.8, Near: []string{"panic", "goroutine", "runtime error", "panicked", "traceback"}, Pattern: regexp.MustCompile(
			`(?m)^panic: .{1,200}|^fatal error: .{1,200}|\bhttp: panic serving \S+: .{1,200}|\bgoroutine \d+ \[running\]:|\bthread '[^']*'(?: \(\d+\))? panicked at \S+`)},
		{ID: "snapshot_mismatch", Category: CatLogicError, Weight: 0.6, Near: []string{"snapshot"}, Pattern: regexp.MustCompile(
			"Snapshot `[^`]*` mismatched|\bSnapshot .{1,200}? mismatched\b|\bto ?match ?(?:inline ?)?snapshot\b|(?i)obsolete snapshot")},
		{ID: "runtime_type_error", Category: CatLogicError, Weight: 0.6, Near: []string{"undefined", "null", "function", "type"}, Pattern: regexp.MustCompile(
			`(?m)\bTypeError: .{1,200}|\b\S+ is not a (?:function|constructor)\b|Cannot read propert(?:y|ies) of (?:undefined|null)(?: \(reading '[^']*'\))?|Cannot set propert(?:y|ies) of (?:undefined|null)|\bReferenceError: \S+ is not defined\b|^[A-Za-z_$][\w$]* is not defined$`)},
		{ID: "html_for_json", Category: CatContractMismatch, Weight: 0.7, Near: []string{"json", "html", "token", "parse", "proxy"}, Pattern: regexp.MustCompile(
			`Unexpected token '?<'?(?:, "<!doctype|, "<html| in JSON)?|(?i)"<!doctype html|\bis not valid JSON\b.{0,40}<`)},
		{ID: "typescript_error", Category: CatLogicError, Weight: 0.7, Near: []string{"type", "assignable", "typescript", "tsc"}, Pattern: regexp.MustCompile(
			`\berror TS\d{4}: .{1,200}|\bTS\d{4}: .{1,200}|\bTypeCheckError: .{1,200}`)},
		{ID: "unhandled_rejection", Category: CatLogicError, Weight: 0.6, Near: []string{"promise", "rejection", "await", "unhandled"}, Pattern: regexp.MustCompile(
			`(?i)\bunhandled ?(?:promise )?rejection\b|\bunhandledRejection\b|\bERR_UNHANDLED_REJECTION\b|\bVitest caught \d+ unhandled error`)},
		{ID: "version_mismatch", Category: CatDependency, Weight: 0.8, Near: []string{"version", "peer", "npm", "engine"}, Pattern: regexp.MustCompile(
			`(?i)\bversion mismatch\b|\bERESOLVE\b|\bpeer dep(?:endency)?\b|\bunsupported engine\b|\brequires a peer\b|\bincompatible (?:version|with)\b|\bERR_REQUIRE_ESM\b`)},
	}
})

// ClassifyInput names a bug or gives raw text to classify.
type ClassifyInput struct {
	BugID string `json:"bug_id,omitempty" jsonschema:"pattern=^BUG-[0-9]{4\\,}$" jsonschema_description:"the bug to classify from its title and cited evidence (give bug_id or text, not both)"`
	Text  string `json:"text,omitempty" jsonschema:"maxLength=200000" jsonschema_description:"raw text to classify: an error message, a log excerpt, a test failure (give bug_id or text, not both)"`
}

// ClassifyOutput is the result of category_classifier.
type ClassifyOutput struct {
	tool.Status
	BugID      string             `json:"bug_id,omitempty" jsonschema_description:"the bug classified (empty for text)"`
	Category   string             `json:"category,omitempty" jsonschema:"enum=contract_mismatch,enum=logic_error,enum=env_config,enum=flaky,enum=test_error,enum=dependency,enum=unknown" jsonschema_description:"the category with the highest score; unknown when no rule matched (closest then names the nearest signature)"`
	Confidence float64            `json:"confidence" jsonschema_description:"0-1: the winning score's share of all scores, scaled down when the winning score is weak"`
	Scores     map[string]float64 `json:"scores,omitempty" jsonschema_description:"per category, the sum of the weights of the rules that matched"`
	Signals    []Signal           `json:"signals" jsonschema_description:"every rule that matched, with where it matched"`
	Closest    string             `json:"closest,omitempty" jsonschema_description:"when the category is unknown: the signature nearest to what the text says (the rule whose words it holds most, and the error line found), so the triager can judge or teach the table"`
}

// CategoryClassifier is the category_classifier tool.
func CategoryClassifier() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "category_classifier",
		Title: "Classify a bug",
		Description: "Classify a bug (from its title and the evidence it cites) or a raw text into contract_mismatch, logic_error, env_config, " +
			"flaky, test_error, dependency or unknown with a rule table: returns the category, a confidence and every matched signal " +
			"with where it was found. For a bug, records the category in triage/triage.json.",
		Effect: tool.Additive, Idempotent: true, Timeout: 30 * time.Second,
	}, classify)
}

func classify(ctx context.Context, c *callctx.Ctx, in ClassifyInput) (ClassifyOutput, error) {
	if (in.BugID == "") == (strings.TrimSpace(in.Text) == "") {
		return ClassifyOutput{}, &tool.ValidationError{Field: "bug_id", Reason: "give exactly one of bug_id (e.g. BUG-0001) or text (a non-blank error message or log excerpt)"}
	}
	f := &facts{History: map[citedTest][]testOutcome{}}
	routes, err := loadContractRoutes(c)
	if err != nil {
		return ClassifyOutput{}, err
	}
	f.Routes = routes
	var bug *bugs.Bug
	if in.BugID != "" {
		if bug, err = loadBug(ctx, c, in.BugID); err != nil {
			return ClassifyOutput{}, err
		}
		if err := bugFacts(c, bug, f); err != nil {
			return ClassifyOutput{}, err
		}
	} else {
		f.Sources = []source{{Where: "text", Text: in.Text}}
	}
	out := decide(f)
	out.Status = tool.Status{OK: true}
	if bug != nil {
		out.BugID = bug.ID
		err := updateSummary(c, bug, func(e *SummaryEntry) { e.Category, e.Confidence = out.Category, out.Confidence })
		if err != nil {
			return ClassifyOutput{}, err
		}
	}
	return out, nil
}

// bugFacts gathers the texts of a bug: its title, its citations, and the
// evidence they point at, plus the recent history of its cited tests.
func bugFacts(c *callctx.Ctx, bug *bugs.Bug, f *facts) error {
	// The evidence first, so a signal is shown where the failure itself
	// says it; the bug's own words after.
	ev, err := collectEvidence(c, bug)
	if err != nil {
		return err
	}
	for _, v := range ev.Verified {
		where := v.Path
		if v.Line > 0 {
			where = fmt.Sprintf("%s:%d", v.Path, v.Line)
		}
		f.Sources = append(f.Sources, source{Where: where, Text: v.Excerpt})
	}
	f.Sources = append(f.Sources, source{Where: "title", Text: bug.Title})
	for i, e := range bug.Evidence {
		for _, fld := range []struct{ name, text string }{{"test", e.Test}, {"log", e.Log}, {"repro", e.Repro}} {
			if fld.text != "" {
				f.Sources = append(f.Sources, source{Where: fmt.Sprintf("evidence[%d].%s", i, fld.name), Text: fld.text})
			}
		}
	}
	if len(ev.Tests) == 0 {
		return nil
	}
	reports, err := ev.allReports(c)
	if err != nil {
		return err
	}
	if len(reports) > recentReports {
		reports = reports[:recentReports]
	}
	for _, t := range ev.Tests {
		for _, r := range reports {
			for _, o := range r.outcomes() {
				if matchTest(o, t.Name, t.File) {
					f.History[t] = append(f.History[t], o)
					break
				}
			}
		}
	}
	return nil
}

// decide runs the table over the facts and picks the category.
func decide(f *facts) ClassifyOutput {
	out := ClassifyOutput{Category: CatUnknown, Signals: []Signal{}, Scores: map[string]float64{}}
	for _, r := range rules() {
		var sigs []Signal
		if r.Pattern != nil {
			for _, s := range f.Sources {
				if m := r.Pattern.FindString(s.Text); m != "" {
					sigs = append(sigs, Signal{Where: s.Where, Excerpt: clip(strings.TrimSpace(m), 300)})
				}
			}
		} else {
			sigs = r.Check(f)
		}
		if len(sigs) == 0 {
			continue
		}
		// A rule votes once however many places it matched; every place
		// is still listed so the choice can be checked.
		out.Scores[r.Category] += r.Weight
		for _, s := range sigs {
			s.Rule, s.Category, s.Weight = r.ID, r.Category, r.Weight
			out.Signals = append(out.Signals, s)
		}
	}
	var best, total float64
	for _, cat := range categoryOrder {
		sc := out.Scores[cat]
		total += sc
		if sc > best {
			best, out.Category = sc, cat
		}
	}
	if best > 0 {
		out.Confidence = math.Round(min(1, best)*best/total*100) / 100
	} else {
		out.Closest = closest(f)
	}
	for k, v := range out.Scores {
		out.Scores[k] = math.Round(v*100) / 100
	}
	return out
}

// closest names the signature nearest to texts no rule matched: the rule
// whose Near words they hold most, and the first line that looks like an
// error.
func closest(f *facts) string {
	var all strings.Builder
	for _, s := range f.Sources {
		all.WriteString(strings.ToLower(s.Text))
		all.WriteByte('\n')
	}
	text := all.String()
	var best rule
	var bestWords []string
	for _, r := range rules() {
		var hit []string
		for _, w := range r.Near {
			if strings.Contains(text, w) {
				hit = append(hit, w)
			}
		}
		if len(hit) > len(bestWords) {
			best, bestWords = r, hit
		}
	}
	var errLine string
	for _, s := range f.Sources {
		for _, l := range strings.Split(s.Text, "\n") {
			if errorLine().MatchString(l) || strings.Contains(strings.ToLower(l), "error") {
				errLine = clip(strings.TrimSpace(l), 200)
				break
			}
		}
		if errLine != "" {
			break
		}
	}
	var parts []string
	if len(bestWords) > 0 {
		parts = append(parts, fmt.Sprintf("nearest rule %s (%s): the text mentions %s but not its signature", best.ID, best.Category, strings.Join(bestWords, ", ")))
	}
	if errLine != "" {
		parts = append(parts, fmt.Sprintf("the error line no rule knows: %q", errLine))
	}
	if len(parts) == 0 {
		return "no rule's signature or words appear in the text; it names no error"
	}
	return strings.Join(parts, "; ")
}

// checkFlaky votes flaky when a cited test both passed and failed in the
// recent reports.
func checkFlaky(f *facts) []Signal {
	var out []Signal
	keys := slices.SortedFunc(maps.Keys(f.History), func(a, b citedTest) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.File, b.File))
	})
	for _, k := range keys {
		var passed, failed string
		for _, o := range f.History[k] {
			switch {
			case o.Status == "passed" && passed == "":
				passed = o.Report
			case o.Status == "failed" && failed == "":
				failed = o.Report
			}
		}
		if passed != "" && failed != "" {
			out = append(out, Signal{Where: failed + ", " + passed,
				Excerpt: fmt.Sprintf("%q failed in %s and passed in %s", k.Name, failed, passed)})
		}
	}
	return out
}

// errorLine is the first line of a thrown error ("TypeError: …").
var errorLine = lazyre.New(`^\s*(?:Uncaught )?([A-Z][A-Za-z]*Error|Error)(?: \[[A-Z_]+\])?: `)

// checkTestError votes test_error when an error other than an assertion is
// thrown and its top stack frame is inside a test file: the test itself
// broke, not the code under test.
func checkTestError(f *facts) []Signal {
	var out []Signal
	for _, s := range f.Sources {
		lines := strings.Split(s.Text, "\n")
		for i, l := range lines {
			m := errorLine().FindStringSubmatch(l)
			if m == nil || m[1] == "AssertionError" {
				continue
			}
			// Assertions, snapshot mismatches and timeouts are raised by the
			// test runner on the test's behalf: they say nothing about the
			// test's own code.
			switch vitest.Classify(l) {
			case vitest.KindAssertion, vitest.KindSnapshot, vitest.KindTimeout:
				continue
			}
			for _, fr := range vitest.Frames(strings.Join(lines[i+1:], "\n")) {
				if fr.Internal() {
					continue
				}
				if testFilePattern().MatchString(fr.File) {
					out = append(out, Signal{Where: s.Where, Excerpt: clip(strings.TrimSpace(l)+" at "+fr.File+":"+strconv.Itoa(fr.Line), 300)})
				}
				break
			}
			break
		}
	}
	return out
}

// syntaxError is a file that does not parse: Vitest's transform (esbuild in
// Vitest 1-3, oxc in 4), Node's loader, or tsc's TS1005-style errors.
var (
	syntaxError = lazyre.New(`(?i)transform failed with \d+ errors?|\[PARSE_ERROR\]|^SyntaxError: (?:Unexpected (?:token|identifier|end)|Invalid or unexpected|missing \)|Unterminated)|error TS1\d{3}:`)
	sourceFile  = lazyre.New(`((?:/|\.{0,2}/|[A-Za-z0-9_@-]+/)?[^\s:'"()\[\]]+\.[cm]?[jt]sx?)(?::\d+|\(\d+)`)
)

// syntaxErrorIn votes for a file that does not parse, in a test file
// (test_error) or in the code under test (logic_error), by the first file
// the error names.
func syntaxErrorIn(testFile bool) func(f *facts) []Signal {
	return func(f *facts) []Signal {
		var out []Signal
		for _, s := range f.Sources {
			loc := syntaxError().FindStringIndex(s.Text)
			if loc == nil {
				continue
			}
			m := sourceFile().FindStringSubmatch(s.Text[loc[0]:])
			if m == nil || testFilePattern().MatchString(m[1]) != testFile {
				continue
			}
			line, _, _ := strings.Cut(s.Text[loc[0]:], "\n")
			out = append(out, Signal{Where: s.Where, Excerpt: clip(strings.TrimSpace(line)+" in "+m[1], 300)})
		}
		return out
	}
}

// requestLine finds "METHOD /path" in a text.
var requestLine = lazyre.New(`\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(/[^\s"'?#,)]*)`)

var notFound = lazyre.New(`\b404\b`)

// checkContract404 votes contract_mismatch when a request to a route the
// contract declares came back 404: the route is missing or mis-mounted.
func checkContract404(f *facts) []Signal {
	var out []Signal
	for _, s := range f.Sources {
		if !notFound().MatchString(s.Text) {
			continue
		}
		for _, m := range requestLine().FindAllStringSubmatch(s.Text, -1) {
			norm := normalizePath(m[2])
			for _, r := range f.Routes {
				if pathMatches(r.Norm, norm) && (r.Method == m[1] || r.Method == "ALL") {
					out = append(out, Signal{Where: s.Where,
						Excerpt: fmt.Sprintf("404 on %s %s, declared in %s as %s %s", m[1], m[2], r.File, r.Method, r.Path)})
					break
				}
			}
		}
	}
	return out
}

// statusAssertion is an assertion on an HTTP status: chai's "expected 200
// to be 201" (received first) and Jest/Vitest's "Expected: 201 / Received:
// 200".
var statusAssertion = lazyre.New(`\bexpected ([1-5]\d\d) to (?:be|equal|deep(?:ly)? equal|strictly equal) ([1-5]\d\d)\b|(?m)^\s*Expected:?\s+([1-5]\d\d)\s*\n\s*Received:?\s+([1-5]\d\d)\s*$`)

// checkDeclaredStatus votes contract_mismatch when a test expected a
// status the contract declares and got another one that is not a server
// error (a 5xx is the server failing, not answering otherwise): the
// implementation answers differently from the contract. When the texts
// name a request the contract declares, that endpoint must be the one
// with the expected status.
func checkDeclaredStatus(f *facts) []Signal {
	var named []contractRoute
	for _, s := range f.Sources {
		for _, m := range requestLine().FindAllStringSubmatch(s.Text, -1) {
			norm := normalizePath(m[2])
			for _, r := range f.Routes {
				if r.Method == m[1] && pathMatches(r.Norm, norm) {
					named = append(named, r)
				}
			}
		}
	}
	candidates := f.Routes
	if len(named) > 0 {
		candidates = named
	}
	var out []Signal
	for _, s := range f.Sources {
		m := statusAssertion().FindStringSubmatch(s.Text)
		if m == nil {
			continue
		}
		got, want := m[1], m[2]
		if got == "" {
			got, want = m[4], m[3]
		}
		if got == want || got[0] == '5' {
			continue
		}
		for _, r := range candidates {
			if strconv.Itoa(r.Status) == want {
				out = append(out, Signal{Where: s.Where, Excerpt: clip(fmt.Sprintf("%s: got %s where %s declares %s %s → %d",
					strings.TrimSpace(m[0]), got, r.File, r.Method, r.Path, r.Status), 300)})
				break
			}
		}
	}
	return out
}

// pathMatches reports whether a concrete request path fits a normalised
// route pattern, where {} stands for any one segment.
func pathMatches(pattern, p string) bool {
	ps, qs := strings.Split(pattern, "/"), strings.Split(p, "/")
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		if ps[i] != "{}" && ps[i] != qs[i] {
			return false
		}
	}
	return true
}
