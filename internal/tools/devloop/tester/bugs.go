package tester

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// EvidenceInput is what a new bug cites.
type EvidenceInput struct {
	Test     string `json:"test,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"full name of the failing test as in the Vitest report (parse_vitest failures[].name); part of the bug's fingerprint"`
	TestFile string `json:"test_file,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"the test file as in the report (parse_vitest failures[].file)"`
	Report   string `json:"report,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"project-relative path of the Vitest JSON report that shows the failure"`
	Log      string `json:"log,omitempty" jsonschema:"maxLength=20000" jsonschema_description:"quoted excerpt of a log that shows the failure"`
	LogFile  string `json:"log_file,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"project-relative path of the log the excerpt comes from, e.g. integration/logs/api.err.log"`
	LogLine  int    `json:"log_line,omitempty" jsonschema:"minimum=1" jsonschema_description:"1-based line of log_file where the excerpt starts; needs log_file"`
	RunID    string `json:"run_id,omitempty" jsonschema:"maxLength=200" jsonschema_description:"id of an integration run (integration/runs/<run_id>.json) that shows the failure"`
	Repro    string `json:"repro,omitempty" jsonschema:"maxLength=20000" jsonschema_description:"steps to reproduce"`
}

// BugOpenInput opens a bug.
type BugOpenInput struct {
	Title    string        `json:"title" jsonschema:"minLength=3,maxLength=300" jsonschema_description:"one line saying what is wrong, e.g. 'countOpen counts done todos'; part of the fingerprint after normalisation (case and punctuation ignored)"`
	UnitID   string        `json:"unit_id,omitempty" jsonschema:"pattern=^[A-Za-z0-9_][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"unit the bug is in; defaults to the session's unit"`
	Severity string        `json:"severity" jsonschema:"enum=blocker,enum=major,enum=minor" jsonschema_description:"blocker: stops the unit from working; major: a feature is wrong; minor: cosmetic or edge case"`
	Category string        `json:"category,omitempty" jsonschema:"maxLength=64" jsonschema_description:"free-form category, e.g. contract_mismatch or logic_error (the triager may refine it)"`
	Evidence EvidenceInput `json:"evidence" jsonschema_description:"where the failure can be checked: at least one of test, test_file (alone for a file-level failure), log, run_id or repro"`
}

// BugOpenOutput is the result of bug_open.
type BugOpenOutput struct {
	tool.Status
	ID            string `json:"id,omitempty" jsonschema_description:"the bug id, BUG-NNNN"`
	Path          string `json:"path,omitempty" jsonschema_description:"project-relative path of the bug file"`
	Duplicate     bool   `json:"duplicate" jsonschema_description:"true when a bug with the same unit, test and normalized title already existed; its id is returned and the evidence was appended to it"`
	EvidenceAdded bool   `json:"evidence_added" jsonschema_description:"false when a duplicate cited exactly what the bug already cites"`
	BugStatus     string `json:"status,omitempty" jsonschema_description:"the bug's current status; a duplicate of a fixed or closed bug may need bug_transition to open"`
	Fingerprint   string `json:"fingerprint,omitempty" jsonschema_description:"sha256 of unit, test and normalized title"`
}

// BugOpen is the bug_open tool.
func BugOpen() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "bug_open",
		Title:       "Open bug",
		Description: "Open a bug in bugs/BUG-NNNN.json with status open. The same unit + test + normalized title returns the existing bug's id with duplicate: true and appends the new evidence to it. Ids never collide across agents' processes.",
		Effect:      tool.Additive,
		Idempotent:  true,
		Timeout:     10 * time.Second,
	}, bugOpen)
}

func bugOpen(ctx context.Context, c *callctx.Ctx, in BugOpenInput) (BugOpenOutput, error) {
	e := in.Evidence
	ev := bugs.Evidence{
		Test: strings.TrimSpace(e.Test), TestFile: e.TestFile, Report: e.Report, Log: e.Log,
		LogFile: e.LogFile, LogLine: e.LogLine, RunID: e.RunID, Repro: e.Repro,
	}
	if ev.Test == "" && ev.TestFile == "" && ev.Log == "" && ev.RunID == "" && ev.Repro == "" {
		return BugOpenOutput{}, tool.Fail(nil, "evidence needs at least one of test, test_file, log, run_id or repro, so the bug can be checked; e.g. evidence.test = the failing test's full name from parse_vitest, or evidence.test_file alone for a file-level failure (a file that does not load, a failing beforeAll)")
	}
	if ev.LogLine > 0 && ev.LogFile == "" {
		return BugOpenOutput{}, tool.Fail(nil, "evidence.log_line needs evidence.log_file: name the log the line number refers to")
	}
	unit := in.UnitID
	if unit == "" {
		unit = c.UnitID
	}
	if bugs.NormalizeTitle(in.Title) == "" {
		return BugOpenOutput{}, tool.Fail(nil, "title %q has no letters or digits; say what is wrong in words", in.Title)
	}
	res, err := c.Bugs.Open(ctx, bugs.NewBug{
		Title: in.Title, UnitID: unit, Severity: in.Severity, Category: in.Category,
		Evidence: ev, By: c.Agent, At: c.Clock.Now(),
	})
	if err != nil {
		return BugOpenOutput{}, err
	}
	b := res.Bug
	data := map[string]any{
		"id": b.ID, "title": b.Title, "unit_id": b.UnitID, "severity": b.Severity,
		"status": b.Status, "duplicate": res.Duplicate, "evidence_added": res.EvidenceAdded,
	}
	msg := fmt.Sprintf("%s opened (%s): %s", b.ID, b.Severity, b.Title)
	if res.Duplicate {
		msg = fmt.Sprintf("%s reported again (duplicate, status %s): %s", b.ID, b.Status, b.Title)
	}
	if _, err := c.AppendTimeline(ctx, "bug.opened", msg, data); err != nil {
		return BugOpenOutput{}, err
	}
	if err := c.Emit(ctx, "bug.opened", data); err != nil {
		return BugOpenOutput{}, err
	}
	return BugOpenOutput{
		Status: tool.Status{OK: true}, ID: b.ID, Path: bugs.Path(b.ID), Duplicate: res.Duplicate,
		EvidenceAdded: res.EvidenceAdded, BugStatus: b.Status, Fingerprint: b.Fingerprint,
	}, nil
}

// BugTransitionInput moves a bug along its life.
type BugTransitionInput struct {
	ID   string `json:"id" jsonschema:"pattern=^BUG-\\d{4\\,}$" jsonschema_description:"the bug id, e.g. BUG-0001"`
	To   string `json:"to" jsonschema:"enum=open,enum=triaged,enum=fixing,enum=fixed,enum=verified,enum=closed,enum=wontfix" jsonschema_description:"new status: open -> triaged -> fixing -> fixed -> verified -> closed; fixed, verified or closed -> open reopens; open or triaged -> wontfix"`
	Note string `json:"note,omitempty" jsonschema:"maxLength=4000" jsonschema_description:"why, kept in the bug's history"`
}

// BugTransitionOutput is the result of bug_transition.
type BugTransitionOutput struct {
	tool.Status
	ID      string   `json:"id,omitempty" jsonschema_description:"the bug id"`
	From    string   `json:"from,omitempty" jsonschema_description:"status before the call"`
	To      string   `json:"to,omitempty" jsonschema_description:"status after the call"`
	Allowed []string `json:"allowed,omitempty" jsonschema_description:"the statuses the bug may move to from its current status (set when the transition was refused)"`
}

// BugTransition is the bug_transition tool.
func BugTransition() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "bug_transition",
		Title:       "Transition bug",
		Description: "Move a bug to a new status: open -> triaged -> fixing -> fixed -> verified -> closed; fixed/verified/closed -> open (reopen); open/triaged -> wontfix. Anything else returns ok:false with the allowed targets. Each move is kept in the bug's history as {from, to, by, at, note}.",
		Effect:      tool.Additive,
		Timeout:     10 * time.Second,
	}, bugTransition)
}

func bugTransition(ctx context.Context, c *callctx.Ctx, in BugTransitionInput) (BugTransitionOutput, error) {
	b, tr, err := c.Bugs.Transition(ctx, in.ID, in.To, c.Agent, in.Note, c.Clock.Now())
	var te *bugs.TransitionError
	switch {
	case errors.As(err, &te):
		return BugTransitionOutput{Status: tool.Status{Reason: te.Error()}, ID: in.ID, From: te.From, Allowed: orEmpty(te.Allowed)}, nil
	case errors.Is(err, bugs.ErrNotFound):
		return BugTransitionOutput{}, tool.Fail(nil, "no bug %s in bugs/; bug_list shows the existing ids", in.ID)
	case err != nil:
		return BugTransitionOutput{}, err
	}
	data := map[string]any{"id": b.ID, "from": tr.From, "to": tr.To, "note": tr.Note, "unit_id": b.UnitID, "severity": b.Severity}
	if _, err := c.AppendTimeline(ctx, "bug.transition", fmt.Sprintf("%s %s → %s", b.ID, tr.From, tr.To), data); err != nil {
		return BugTransitionOutput{}, err
	}
	if err := c.Emit(ctx, "bug.transition", data); err != nil {
		return BugTransitionOutput{}, err
	}
	return BugTransitionOutput{Status: tool.Status{OK: true}, ID: b.ID, From: tr.From, To: tr.To}, nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// BugListInput filters the bug list.
type BugListInput struct {
	Status   string `json:"status,omitempty" jsonschema:"enum=open,enum=triaged,enum=fixing,enum=fixed,enum=verified,enum=closed,enum=wontfix" jsonschema_description:"only bugs in this status"`
	UnitID   string `json:"unit_id,omitempty" jsonschema:"pattern=^[A-Za-z0-9_][A-Za-z0-9._-]{0\\,63}$" jsonschema_description:"only bugs of this unit"`
	Severity string `json:"severity,omitempty" jsonschema:"enum=blocker,enum=major,enum=minor" jsonschema_description:"only bugs of this severity"`
	Limit    int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"at most this many bugs (default 100)"`
	tool.Page
}

// BugSummary is one line of bug_list.
type BugSummary struct {
	ID        string    `json:"id" jsonschema_description:"bug id"`
	Title     string    `json:"title" jsonschema_description:"bug title"`
	UnitID    string    `json:"unit_id,omitempty" jsonschema_description:"unit"`
	Severity  string    `json:"severity" jsonschema_description:"blocker, major or minor"`
	Status    string    `json:"status" jsonschema_description:"current status"`
	Category  string    `json:"category,omitempty" jsonschema_description:"category"`
	Evidence  int       `json:"evidence" jsonschema_description:"number of evidence entries"`
	UpdatedAt time.Time `json:"updated_at" jsonschema_description:"last change"`
}

// BugListOutput is the result of bug_list.
type BugListOutput struct {
	tool.Status
	Total int          `json:"total" jsonschema_description:"bugs matching the filters, before limit"`
	Bugs  []BugSummary `json:"bugs" page:"1" jsonschema_description:"matching bugs, blocker before major before minor, then by id"`
	// Unreadable is left out when every bug file reads.
	Unreadable []string        `json:"unreadable,omitempty" page:"2" jsonschema_description:"bug files that could not be read or decoded, each with why; they are not in bugs or total: fix or remove them"`
	Truncated  *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// BugList is the bug_list tool.
func BugList() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "bug_list",
		Title:       "List bugs",
		Description: "List bugs as summaries, filtered by status, unit and severity, sorted by severity (blocker, major, minor) then id.",
		Effect:      tool.ReadOnly,
		Timeout:     10 * time.Second,
	}, bugList)
}

func bugList(ctx context.Context, c *callctx.Ctx, in BugListInput) (BugListOutput, error) {
	limit := in.Limit
	if limit == 0 {
		limit = 100
	}
	res, err := c.Bugs.List(ctx, bugs.Query{Status: in.Status, UnitID: in.UnitID, Severity: in.Severity, Limit: limit})
	if err != nil {
		return BugListOutput{}, err
	}
	out := BugListOutput{Status: tool.Status{OK: true}, Total: res.Total, Bugs: []BugSummary{}}
	for _, u := range res.Unreadable {
		out.Unreadable = append(out.Unreadable, u.Reason)
	}
	for _, b := range res.Bugs {
		out.Bugs = append(out.Bugs, BugSummary{
			ID: b.ID, Title: b.Title, UnitID: b.UnitID, Severity: b.Severity, Status: b.Status,
			Category: b.Category, Evidence: b.Evidence, UpdatedAt: b.UpdatedAt,
		})
	}
	return out, nil
}
