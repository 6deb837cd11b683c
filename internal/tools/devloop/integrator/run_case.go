package integrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/schema"
	"github.com/toolhost/toolhost/internal/tool"
	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// Expect is what a step's response must show.
type Expect struct {
	Status     int               `json:"status,omitempty" jsonschema:"minimum=100,maximum=599" jsonschema_description:"expected HTTP status (default: any 2xx)"`
	JSONSubset json.RawMessage   `json:"json_subset,omitempty" jsonschema_description:"JSON the response body must contain: each key of an expected object present with a matching value (extra keys are fine), arrays matched element by element for the expected elements, scalars equal"`
	Contains   string            `json:"contains,omitempty" jsonschema:"maxLength=65536" jsonschema_description:"text the response body must contain"`
	Header     map[string]string `json:"header,omitempty" jsonschema_description:"response headers (name case-insensitive) whose value must contain the given text"`
}

// Step is one HTTP request of a case.
type Step struct {
	Name      string            `json:"name,omitempty" jsonschema:"maxLength=200" jsonschema_description:"what the step checks"`
	Method    string            `json:"method" jsonschema:"enum=GET,enum=POST,enum=PUT,enum=PATCH,enum=DELETE,enum=HEAD,enum=OPTIONS" jsonschema_description:"HTTP method"`
	URL       string            `json:"url" jsonschema:"minLength=1,maxLength=4096" jsonschema_description:"loopback URL, placeholders allowed, e.g. http://127.0.0.1:{{port:api}}/items/{{var:id}}"`
	Headers   map[string]string `json:"headers,omitempty" jsonschema_description:"request headers; placeholders allowed in values"`
	Body      json.RawMessage   `json:"body,omitempty" jsonschema_description:"request body as JSON, placeholders resolved in its strings: an object, array, number or boolean is sent JSON-encoded (Content-Type application/json unless headers set one); a string is sent as its text"`
	BodyFile  string            `json:"body_file,omitempty" jsonschema:"maxLength=1024" jsonschema_description:"project-relative file sent byte for byte as the body, without placeholder resolution (instead of body)"`
	Expect    Expect            `json:"expect,omitempty" jsonschema_description:"checks on the response; placeholders allowed"`
	Capture   map[string]string `json:"capture,omitempty" jsonschema_description:"variables taken from the JSON response: name -> JSON pointer (RFC 6901), e.g. {\"id\": \"/id\"}; later steps use {{var:id}}"`
	TimeoutMS int               `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=60000" jsonschema_description:"timeout of this request in ms (default 10000)"`
}

// Case is an HTTP test case: integration/cases/<id>.json or inline.
type Case struct {
	ID    string         `json:"id" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"case id; names the run file integration/runs/<id>-<ts>.json"`
	Vars  map[string]any `json:"vars,omitempty" jsonschema_description:"initial values for {{var:<name>}}"`
	Steps []Step         `json:"steps" jsonschema:"minItems=1,maxItems=200" jsonschema_description:"requests run in order; the run stops at the first failing step"`
}

// RunCaseInput is the run_case request.
type RunCaseInput struct {
	CasePath string `json:"case_path,omitempty" jsonschema:"maxLength=1024" jsonschema_description:"project-relative case file, e.g. integration/cases/create-item.json (give case_path or case)"`
	Case     *Case  `json:"case,omitempty" jsonschema_description:"the case inline (give case_path or case)"`
}

// Mismatch is one failed check of a step.
type Mismatch struct {
	Check    string `json:"check" jsonschema:"enum=status,enum=contains,enum=header,enum=json_subset,enum=capture" jsonschema_description:"which check failed"`
	Pointer  string `json:"pointer,omitempty" jsonschema_description:"JSON pointer into the response body (json_subset, capture) or the header name"`
	Expected any    `json:"expected,omitempty" jsonschema_description:"what the case expected there"`
	Actual   any    `json:"actual,omitempty" jsonschema_description:"what the response had there (absent when missing)"`
	Message  string `json:"message" jsonschema_description:"the mismatch in words"`
}

// StepResult is the outcome of one step.
type StepResult struct {
	Index      int            `json:"index" jsonschema_description:"0-based step index"`
	Name       string         `json:"name,omitempty" jsonschema_description:"step name"`
	Method     string         `json:"method" jsonschema_description:"HTTP method"`
	URL        string         `json:"url" jsonschema_description:"URL after placeholders"`
	OK         bool           `json:"ok" jsonschema_description:"every check passed"`
	Skipped    bool           `json:"skipped,omitempty" jsonschema_description:"not run because an earlier step failed"`
	Status     int            `json:"status,omitempty" jsonschema_description:"HTTP status received"`
	ElapsedMS  int64          `json:"elapsed_ms" jsonschema_description:"request time in ms"`
	Diff       []Mismatch     `json:"diff,omitempty" jsonschema_description:"failed checks: expected vs actual"`
	Captured   map[string]any `json:"captured,omitempty" jsonschema_description:"variables captured by this step"`
	Unresolved []Unresolved   `json:"unresolved,omitempty" jsonschema_description:"placeholders that could not be resolved (the request was not sent)"`
	Error      string         `json:"error,omitempty" jsonschema_description:"why the step failed without a diff (connection refused, timeout, bad input)"`
	Response   string         `json:"response_excerpt,omitempty" jsonschema_description:"start of the response body, on failure"`
}

// RunCaseOutput is the run_case result.
type RunCaseOutput struct {
	tool.Status
	RunID   string       `json:"run_id,omitempty" jsonschema_description:"id of the stored run"`
	Path    string       `json:"path,omitempty" jsonschema_description:"project-relative run file"`
	Passed  int          `json:"passed" jsonschema_description:"steps that passed"`
	Failed  int          `json:"failed" jsonschema_description:"steps that failed"`
	Skipped int          `json:"skipped" jsonschema_description:"steps not run"`
	Steps   []StepResult `json:"steps,omitempty" jsonschema_description:"per step results"`
}

// RunRecord is integration/runs/<case>-<ts>.json.
type RunRecord struct {
	RunID      string         `json:"run_id"`
	CaseID     string         `json:"case_id"`
	CasePath   string         `json:"case_path,omitempty"`
	Agent      string         `json:"agent"`
	CallID     string         `json:"call_id"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	OK         bool           `json:"ok"`
	Passed     int            `json:"passed"`
	Failed     int            `json:"failed"`
	Skipped    int            `json:"skipped"`
	Vars       map[string]any `json:"vars,omitempty"`
	Steps      []StepResult   `json:"steps"`
}

// RunCase is the run_case tool.
func RunCase() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "run_case",
		Title: "Run an HTTP test case",
		Description: "Run an HTTP case (integration/cases/<id>.json or inline) against loopback units: steps in order, " +
			"placeholders resolved per step with the variables captured so far, each response checked (status, json_subset, " +
			"contains, header) with a diff of expected vs actual at the JSON pointer. The run stops at the first failing step " +
			"and is stored in integration/runs/<case>-<ts>.json. Bodies are sent as given. Sends progress notifications.",
		Effect: tool.Additive,
	}, runCase)
}

// maxResponse is how much of a response body is read for the checks.
const maxResponse = 4 << 20

// excerptLen is how much of a response a failed step shows.
const excerptLen = 2048

// maxDiff bounds the mismatches listed per step.
const maxDiff = 50

var caseSchema = sync.OnceValues(func() (*schema.Schema, error) {
	return schema.Compile(tool.Reflect(Case{}, false))
})

// loadCase reads and validates a case file against the inline case schema.
func loadCase(c *callctx.Ctx, rel string) (*Case, error) {
	b, err := c.Files.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, tool.Fail(nil, "case_path %s does not exist; write the case to %s/<id>.json or pass it inline as case", rel, CasesDir)
	}
	if err != nil {
		return nil, tool.Fail(err, "case_path %s cannot be read", rel)
	}
	sch, err := caseSchema()
	if err != nil {
		return nil, err
	}
	doc, err := wirejson.DecodeAny(b)
	if err != nil {
		return nil, tool.Fail(fault.Content(err), "case file %s is not valid JSON", rel)
	}
	if err := sch.Check(doc); err != nil {
		return nil, tool.Fail(nil, "case file %s does not match the case schema: %s", rel, err.(*tool.ValidationError).Reason)
	}
	var cs Case
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, tool.Fail(fault.Content(err), "case file %s", rel)
	}
	return &cs, nil
}

func runCase(ctx context.Context, c *callctx.Ctx, in RunCaseInput) (RunCaseOutput, error) {
	if (in.CasePath == "") == (in.Case == nil) {
		return RunCaseOutput{}, &tool.ValidationError{Field: "case_path", Reason: "give exactly one of case_path or case"}
	}
	cs := in.Case
	if in.CasePath != "" {
		var err error
		if cs, err = loadCase(c, in.CasePath); err != nil {
			return RunCaseOutput{}, err
		}
	}
	started := c.Clock.Now()
	vars := map[string]any{}
	maps.Copy(vars, cs.Vars)
	client := loopbackClient()
	results := make([]StepResult, len(cs.Steps))
	failed := false
	for i, st := range cs.Steps {
		results[i] = StepResult{Index: i, Name: st.Name, Method: st.Method, URL: st.URL}
		if failed {
			results[i].Skipped = true
			continue
		}
		res, err := runStep(ctx, c, client, i, st, vars)
		if err != nil {
			return RunCaseOutput{}, err
		}
		results[i] = res
		failed = !res.OK
		word := "passed"
		if failed {
			word = "failed"
		}
		c.Progress(float64(i+1), float64(len(cs.Steps)), fmt.Sprintf("step %d/%d %s %s", i+1, len(cs.Steps), stepLabel(st), word))
	}
	out := RunCaseOutput{Steps: results}
	for _, r := range results {
		switch {
		case r.Skipped:
			out.Skipped++
		case r.OK:
			out.Passed++
		default:
			out.Failed++
		}
	}
	out.OK = out.Failed == 0
	finished := c.Clock.Now()
	out.RunID = cs.ID + "-" + finished.UTC().Format("20060102T150405.000000000Z")
	out.Path = RunsDir + "/" + out.RunID + ".json"
	rec := RunRecord{
		RunID: out.RunID, CaseID: cs.ID, CasePath: in.CasePath, Agent: c.Agent, CallID: c.CallID,
		StartedAt: started, FinishedAt: finished, OK: out.OK, Passed: out.Passed, Failed: out.Failed,
		Skipped: out.Skipped, Vars: vars, Steps: results,
	}
	// The record keeps no credential the case sent (an Authorization
	// header, a token in a URL or body).
	stored, err := redact.Marshal(rec)
	if err != nil {
		return RunCaseOutput{}, err
	}
	if err := c.Files.WriteJSON(out.Path, stored); err != nil {
		return RunCaseOutput{}, err
	}
	if !out.OK {
		for _, r := range results {
			if !r.OK && !r.Skipped {
				out.Reason = fmt.Sprintf("step %d (%s) failed: %s; run stored in %s", r.Index, stepLabel(cs.Steps[r.Index]), stepProblem(r), out.Path)
				break
			}
		}
	}
	return out, nil
}

func stepLabel(st Step) string {
	if st.Name != "" {
		return st.Name
	}
	return st.Method + " " + st.URL
}

func stepProblem(r StepResult) string {
	switch {
	case r.Error != "":
		return r.Error
	case len(r.Diff) > 0:
		return r.Diff[0].Message
	}
	return "see the step's diff"
}

// runStep resolves, sends and checks one step; captures go into vars. It
// returns an error only for cancellation or a system failure.
func runStep(ctx context.Context, c *callctx.Ctx, client *http.Client, i int, st Step, vars map[string]any) (StepResult, error) {
	res := StepResult{Index: i, Name: st.Name, Method: st.Method}
	r := newResolver(c, vars)
	res.URL = r.text(st.URL, "/url")
	headers := map[string]string{}
	for k, v := range st.Headers {
		headers[k] = r.text(v, "/headers/"+escapePointer(k))
	}
	var body []byte
	switch {
	case len(st.Body) > 0 && st.BodyFile != "":
		res.Error = "give body or body_file, not both"
		return res, nil
	case len(st.Body) > 0:
		var text string
		if json.Unmarshal(st.Body, &text) == nil {
			body = []byte(r.text(text, "/body"))
			break
		}
		b, err := r.rawJSON(st.Body, "/body")
		if err != nil {
			res.Error = "body: " + err.Error()
			return res, nil
		}
		body = b
		if !hasHeader(headers, "Content-Type") {
			headers["Content-Type"] = "application/json"
		}
	case st.BodyFile != "":
		b, err := c.Files.ReadFile(st.BodyFile)
		if err != nil {
			res.Error = fmt.Sprintf("body_file %s cannot be read: %s", st.BodyFile, tool.Explain(c, err))
			return res, nil
		}
		body = b
	}
	exp, err := resolveExpect(r, st.Expect)
	if err != nil {
		res.Error = err.Error()
		return res, nil
	}
	if len(r.unresolved) > 0 {
		res.Unresolved = r.unresolved
		res.Error = r.summary()
		return res, nil
	}
	if _, err := checkLoopbackURL(res.URL); err != nil {
		res.Error = err.Error()
		return res, nil
	}
	timeout := time.Duration(st.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, st.Method, res.URL, bytes.NewReader(body))
	if err != nil {
		res.Error = tool.Explain(c, fault.Content(err))
		return res, nil
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		res.ElapsedMS = time.Since(t0).Milliseconds()
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Error = "the request failed: " + tool.Explain(c, err)
		return res, nil
	}
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	res.ElapsedMS = time.Since(t0).Milliseconds()
	res.Status = resp.StatusCode
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Error = "reading the response: " + tool.Explain(c, err)
		return res, nil
	}
	res.Diff = check(exp, resp, respBody)
	if len(st.Capture) > 0 {
		res.Captured = map[string]any{}
		capture(st.Capture, respBody, vars, res.Captured, &res.Diff)
	}
	if len(res.Diff) > maxDiff {
		res.Diff = res.Diff[:maxDiff]
	}
	res.OK = len(res.Diff) == 0
	if !res.OK {
		res.Response = excerpt(respBody)
	}
	return res, nil
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func excerpt(b []byte) string {
	if len(b) > excerptLen {
		return string(b[:excerptLen]) + "…"
	}
	return string(b)
}

// resolvedExpect is an Expect with placeholders resolved and JSON decoded.
type resolvedExpect struct {
	status   int
	subset   any
	hasSub   bool
	contains string
	header   map[string]string
}

func resolveExpect(r *resolver, e Expect) (resolvedExpect, error) {
	out := resolvedExpect{status: e.Status, contains: r.text(e.Contains, "/expect/contains"), header: map[string]string{}}
	for k, v := range e.Header {
		out.header[k] = r.text(v, "/expect/header/"+escapePointer(k))
	}
	if len(e.JSONSubset) > 0 {
		v, err := decodeJSON(e.JSONSubset)
		if err != nil {
			return out, fmt.Errorf("expect.json_subset: %v", err)
		}
		out.subset, out.hasSub = r.value(v, "/expect/json_subset"), true
	}
	return out, nil
}

// check compares a response with the expectations.
func check(e resolvedExpect, resp *http.Response, body []byte) []Mismatch {
	var diff []Mismatch
	switch {
	case e.status != 0 && resp.StatusCode != e.status:
		diff = append(diff, Mismatch{Check: "status", Expected: e.status, Actual: resp.StatusCode,
			Message: fmt.Sprintf("status: expected %d, got %d", e.status, resp.StatusCode)})
	case e.status == 0 && (resp.StatusCode < 200 || resp.StatusCode > 299):
		diff = append(diff, Mismatch{Check: "status", Expected: "2xx", Actual: resp.StatusCode,
			Message: fmt.Sprintf("status: expected 2xx, got %d", resp.StatusCode)})
	}
	if e.contains != "" && !bytes.Contains(body, []byte(e.contains)) {
		diff = append(diff, Mismatch{Check: "contains", Expected: e.contains,
			Message: fmt.Sprintf("body does not contain %q", e.contains)})
	}
	names := slices.Sorted(maps.Keys(e.header))
	for _, k := range names {
		want := e.header[k]
		got, ok := resp.Header[http.CanonicalHeaderKey(k)]
		switch {
		case !ok:
			diff = append(diff, Mismatch{Check: "header", Pointer: k, Expected: want, Message: fmt.Sprintf("header %s is missing", k)})
		case !strings.Contains(strings.Join(got, ", "), want):
			diff = append(diff, Mismatch{Check: "header", Pointer: k, Expected: want, Actual: strings.Join(got, ", "),
				Message: fmt.Sprintf("header %s: expected it to contain %q, got %q", k, want, strings.Join(got, ", "))})
		}
	}
	if e.hasSub {
		actual, err := decodeJSON(body)
		if err != nil {
			diff = append(diff, Mismatch{Check: "json_subset", Pointer: "", Expected: e.subset,
				Message: "response body is not JSON: " + err.Error()})
		} else {
			subset(e.subset, actual, "", &diff)
		}
	}
	return diff
}

// subset appends a mismatch for every place where exp is not contained in
// act.
func subset(exp, act any, ptr string, diff *[]Mismatch) {
	if len(*diff) > maxDiff {
		return
	}
	where := ptr
	if where == "" {
		where = "(root)"
	}
	switch e := exp.(type) {
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			*diff = append(*diff, Mismatch{Check: "json_subset", Pointer: ptr, Expected: exp, Actual: act,
				Message: fmt.Sprintf("%s: expected an object, got %s", where, jsonKind(act))})
			return
		}
		keys := slices.Sorted(maps.Keys(e))
		for _, k := range keys {
			p := ptr + "/" + escapePointer(k)
			av, ok := a[k]
			if !ok {
				*diff = append(*diff, Mismatch{Check: "json_subset", Pointer: p, Expected: e[k],
					Message: fmt.Sprintf("%s: missing in the response", p)})
				continue
			}
			subset(e[k], av, p, diff)
		}
	case []any:
		a, ok := act.([]any)
		if !ok {
			*diff = append(*diff, Mismatch{Check: "json_subset", Pointer: ptr, Expected: exp, Actual: act,
				Message: fmt.Sprintf("%s: expected an array, got %s", where, jsonKind(act))})
			return
		}
		if len(a) < len(e) {
			*diff = append(*diff, Mismatch{Check: "json_subset", Pointer: ptr, Expected: exp, Actual: act,
				Message: fmt.Sprintf("%s: expected at least %d elements, got %d", where, len(e), len(a))})
			return
		}
		for i := range e {
			subset(e[i], a[i], ptr+"/"+strconv.Itoa(i), diff)
		}
	default:
		if !scalarEqual(exp, act) {
			*diff = append(*diff, Mismatch{Check: "json_subset", Pointer: ptr, Expected: exp, Actual: act,
				Message: fmt.Sprintf("%s: expected %s, got %s", where, stringifyJSON(exp), stringifyJSON(act))})
		}
	}
}

func scalarEqual(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		x, ok1 := new(big.Float).SetString(an.String())
		y, ok2 := new(big.Float).SetString(bn.String())
		return ok1 && ok2 && x.Cmp(y) == 0
	}
	if aok || bok {
		return false
	}
	return a == b
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

func stringifyJSON(v any) string {
	b, err := marshalCompact(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// capture stores the values at the JSON pointers into vars.
func capture(spec map[string]string, body []byte, vars, captured map[string]any, diff *[]Mismatch) {
	names := slices.Sorted(maps.Keys(spec))
	doc, err := decodeJSON(body)
	for _, name := range names {
		ptr := spec[name]
		if err != nil {
			*diff = append(*diff, Mismatch{Check: "capture", Pointer: ptr, Message: fmt.Sprintf("capture %s: response body is not JSON", name)})
			continue
		}
		v, perr := lookupPointer(doc, ptr)
		if perr != nil {
			*diff = append(*diff, Mismatch{Check: "capture", Pointer: ptr, Message: fmt.Sprintf("capture %s: %v", name, perr)})
			continue
		}
		vars[name], captured[name] = v, v
	}
}

// lookupPointer resolves an RFC 6901 JSON pointer.
func lookupPointer(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("JSON pointer %q must start with / (e.g. /id)", ptr)
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[tok]
			if !ok {
				return nil, fmt.Errorf("JSON pointer %s: key %q not found in the response", ptr, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("JSON pointer %s: index %q out of range (array of %d)", ptr, tok, len(t))
			}
			cur = t[i]
		default:
			return nil, fmt.Errorf("JSON pointer %s: cannot descend into %s", ptr, jsonKind(cur))
		}
	}
	return cur, nil
}
