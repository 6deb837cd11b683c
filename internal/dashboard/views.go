package dashboard

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/audit"
	"github.com/toolhost/toolhost/internal/redact"
	"github.com/toolhost/toolhost/internal/store"
)

// What the page is sent. Every string that an agent, a tool or a command
// could have put a secret into goes through redact on its way here.

// Limits of what is shown: they bound the page's memory and each message.
const (
	maxArgsShown  = 2000 // bytes of a call's arguments
	maxErrorShown = 4000 // bytes of an error message
	maxTextShown  = 2000 // bytes of a timeline message
)

// AuditRow is one call as the audit stream shows it.
type AuditRow struct {
	TS        time.Time    `json:"ts"`
	CallID    string       `json:"call_id"`
	SessionID string       `json:"session_id,omitempty"`
	Agent     string       `json:"agent"`
	UnitID    string       `json:"unit_id,omitempty"`
	Tool      string       `json:"tool"`
	Source    string       `json:"source,omitempty"`
	Status    audit.Status `json:"status"`
	ErrorKind string       `json:"error_kind,omitempty"`
	Error     string       `json:"error,omitempty"`
	// Rule is the policy rule that decided the call (a refusal's reason).
	Rule       string  `json:"rule,omitempty"`
	RetryCount int     `json:"retry_count,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	Args       string  `json:"args,omitempty"`
	Sandbox    string  `json:"sandbox,omitempty"`
	// Pin is set on a row about an upstream tool's pinned definition.
	Pin *audit.PinNote `json:"pin,omitempty"`
	// ClientSessionID and ClientAgentID are the agent CLI's own ids (one
	// Claude session's agents share the first).
	ClientSessionID string `json:"client_session_id,omitempty"`
	ClientAgentID   string `json:"client_agent_id,omitempty"`
}

func auditRow(r *audit.Row) AuditRow {
	return AuditRow{
		TS: r.TS, CallID: r.CallID, SessionID: r.SessionID, Agent: shortAgent(r.Agent), UnitID: r.UnitID, Tool: r.Tool,
		Source: r.Source, Status: r.Status, ErrorKind: r.ErrorKind, Error: clip(redact.String(r.Error), maxErrorShown),
		Rule: clip(r.Rule, 200), RetryCount: r.RetryCount, DurationMS: r.DurationMS, Args: clip(compactArgs(r.Arguments), maxArgsShown),
		Sandbox: clip(redact.String(r.Sandbox), 300), Pin: r.Pin,
		ClientSessionID: clip(r.ClientSessionID, 128), ClientAgentID: clip(r.ClientAgentID, 128),
	}
}

// notACall reports whether a row records something other than a call
// (a superseded confirmation, an upstream pin): the figures and an agent's
// last call pass it over, as audit.StatsBuilder does.
func notACall(status audit.Status) bool {
	return status == audit.StatusSuperseded || status == audit.StatusPin
}

// shortAgent maps a template name an older row may carry to the short one.
func shortAgent(a string) string {
	if s, ok := cutPrefix(a, "devloop-"); ok {
		return s
	}
	return a
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// compactArgs is the arguments as one redacted line.
func compactArgs(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	red := redact.JSON(raw)
	if json.Compact(&b, red) != nil {
		return redact.String(string(raw))
	}
	return b.String()
}

// clip cuts s to at most n bytes on a rune boundary, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// TimelineEntry is one line of the agents' timeline.
type TimelineEntry struct {
	Seq     int64     `json:"seq"`
	TS      time.Time `json:"ts"`
	Agent   string    `json:"agent"`
	UnitID  string    `json:"unit_id,omitempty"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	Data    string    `json:"data,omitempty"`
}

func timelineEntry(e store.TimelineEntry) TimelineEntry {
	t := TimelineEntry{Seq: e.Seq, TS: e.TS, Agent: shortAgent(e.Agent), UnitID: e.UnitID, Kind: e.Kind,
		Message: clip(redact.String(e.Message), maxTextShown)}
	if e.Data != nil {
		if b, err := redact.Marshal(e.Data); err == nil && string(b) != "null" {
			t.Data = clip(string(b), maxArgsShown)
		}
	}
	return t
}

// Card is one agent's card.
type Card struct {
	Name    string   `json:"name"`
	Short   string   `json:"short"`
	Model   string   `json:"model,omitempty"`
	Loop    string   `json:"loop,omitempty"`
	Tools   []string `json:"tools"`
	Hidden  int      `json:"hidden_tools"`
	Todo    *Todo    `json:"todo,omitempty"`
	Runtime *Runtime `json:"runtime,omitempty"`
	// Problem says why a state file could not be read.
	Problem  string    `json:"problem,omitempty"`
	LastCall *LastCall `json:"last_call,omitempty"`
	// Serving are the agent's servers running now; Last is the one that
	// ran last when none does.
	Serving []Serve `json:"serving"`
	Last    *Serve  `json:"last_serve,omitempty"`
}

// Todo is what the card shows of a todolist.
type Todo struct {
	Total       int        `json:"total"`
	Done        int        `json:"done"`
	ProgressPct int        `json:"progress_pct"`
	Current     *Step      `json:"current,omitempty"`
	Blocked     []Step     `json:"blocked"`
	Steps       []Step     `json:"steps"`
	UpdatedAt   *time.Time `json:"updated_at,omitempty"`
}

// Step is one step of a todolist.
type Step struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Note        string `json:"note,omitempty"`
}

// Runtime is an agent's runtime state.
type Runtime struct {
	Phase     string    `json:"phase,omitempty"`
	Status    string    `json:"status,omitempty"`
	Message   string    `json:"message,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// LastCall is the newest call of an agent.
type LastCall struct {
	TS         time.Time    `json:"ts"`
	Tool       string       `json:"tool"`
	Status     audit.Status `json:"status"`
	ErrorKind  string       `json:"error_kind,omitempty"`
	DurationMS float64      `json:"duration_ms"`
}

// Serve is one `toolhost serve` session of an agent.
type Serve struct {
	Session    string    `json:"session"`
	UnitID     string    `json:"unit_id,omitempty"`
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"-"`
	StartedAt  time.Time `json:"started_at"`
	// Host is the machine the server runs on.
	Host string `json:"host,omitempty"`
	// State is serveRunning, serveEnded (it said so) or serveGone (its
	// process is not there any more and it never said it ended: killed).
	State   string     `json:"state"`
	EndedAt *time.Time `json:"ended_at,omitempty"`
}

// triageSummary is the part of the triager's summary
// (bugs.TriageSummaryPath) the board shows.
type triageSummary struct {
	Bugs map[string]*struct {
		Category   string  `json:"category"`
		Confidence float64 `json:"confidence"`
		Similar    []struct {
			ID    string  `json:"bug_id"`
			Score float64 `json:"score"`
		} `json:"similar"`
	} `json:"bugs"`
}

// States of a server.
const (
	serveRunning = "running"
	serveEnded   = "ended"
	serveGone    = "gone"
)

// Stats are the last hour's figures.
type Stats struct {
	Since time.Time `json:"since"`
	// Capped is set when the window holds more calls than are kept, so the
	// figures cover only the newest of them.
	Capped   bool                  `json:"capped,omitempty"`
	Tools    []audit.ToolStats     `json:"tools"`
	Agents   map[string]AgentStats `json:"agents"`
	Calls    int                   `json:"calls"`
	Refusals int                   `json:"refusals"`
	Failures int                   `json:"failures"`
}

// AgentStats are one agent's calls in the window.
type AgentStats struct {
	Calls    int `json:"calls"`
	Refusals int `json:"refusals"`
	Failures int `json:"failures"`
}

// Approval is a confirmation as the page shows it.
type Approval struct {
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Agent     string          `json:"agent"`
	Tool      string          `json:"tool"`
	Session   string          `json:"session"`
	Arguments json.RawMessage `json:"arguments"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	DecidedAt *time.Time      `json:"decided_at,omitempty"`
	UsedAt    *time.Time      `json:"used_at,omitempty"`
	UsedBy    string          `json:"used_by,omitempty"`
	Decision  string          `json:"decision,omitempty"`
	Diff      *Diff           `json:"diff,omitempty"`
}

// Approvals are the pending confirmations and the recent decisions.
type Approvals struct {
	Pending []Approval `json:"pending"`
	Recent  []Approval `json:"recent"`
	Problem string     `json:"problem,omitempty"`
}

// Diff is what a write would change, where that can be computed.
type Diff struct {
	Path    string `json:"path"`
	New     bool   `json:"new_file,omitempty"`
	Unified string `json:"unified"`
	Note    string `json:"note,omitempty"`
}

// Board is the bug board: the bugs by state.
type Board struct {
	Columns []Column `json:"columns"`
	Total   int      `json:"total"`
	Problem string   `json:"problem,omitempty"`
}

// Column is one state of the board; Bugs holds at most maxBugsShown of
// its Count bugs, blockers first, newest first.
type Column struct {
	Status string    `json:"status"`
	Count  int       `json:"count"`
	Bugs   []BugCard `json:"bugs"`
}

// BugCard is a bug on the board.
type BugCard struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	UnitID     string    `json:"unit_id,omitempty"`
	Severity   string    `json:"severity,omitempty"`
	Category   string    `json:"category,omitempty"`
	Confidence float64   `json:"confidence,omitempty"`
	Evidence   int       `json:"evidence"`
	Similar    []Similar `json:"similar,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
	Unreadable string    `json:"unreadable,omitempty"`
}

// Similar is a neighbour find_similar_bug found.
type Similar struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// Doc is a link to a document of the project.
type Doc struct {
	Title string `json:"title"`
	Path  string `json:"path"`
	Kind  string `json:"kind"` // site, contract
}

// Snapshot is the whole state, sent when a page connects.
type Snapshot struct {
	Project   string          `json:"project"`
	Now       time.Time       `json:"now"`
	Agents    []*Card         `json:"agents"`
	Audit     []AuditRow      `json:"audit"`
	Timeline  []TimelineEntry `json:"timeline"`
	Stats     Stats           `json:"stats"`
	Approvals Approvals       `json:"approvals"`
	Bugs      Board           `json:"bugs"`
	Docs      []Doc           `json:"docs"`
}
