package callctx

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/sandbox"
	"github.com/toolhost/toolhost/internal/store"
)

// Identity is who runs a session: from launch flags or TOOLHOST_* variables.
type Identity struct {
	// ProjectID is the project's id (the {pid} of the agents' cwd
	// templates; "pid" in the stores' JSON, as the seed names it).
	ProjectID  string
	Agent      string // short agent name: pm, architect, coder, tester, integrator, bug-triager
	AgentName  string // template name: devloop-pm …
	UnitID     string
	SessionID  string
	Company    string
	ProjectDir string // absolute
	// ClientSessionID is the agent CLI's own session id, as it hands it to
	// the MCP servers it starts (Claude Code: CLAUDE_CODE_SESSION_ID, the
	// same id its hooks get as session_id); empty when it gives none.
	ClientSessionID string
}

// ClientSessionEnv is the variable in which Claude Code gives the MCP
// servers it starts (an agent's own included) its session id.
const ClientSessionEnv = "CLAUDE_CODE_SESSION_ID"

// FromEnv fills empty fields of id from TOOLHOST_* environment variables.
func (id *Identity) FromEnv(getenv func(string) string) {
	set := func(dst *string, key string) {
		if *dst == "" {
			*dst = getenv(key)
		}
	}
	set(&id.ProjectDir, "TOOLHOST_PROJECT_DIR")
	set(&id.Agent, "TOOLHOST_AGENT")
	set(&id.SessionID, "TOOLHOST_SESSION")
	set(&id.UnitID, "TOOLHOST_UNIT")
	set(&id.Company, "TOOLHOST_COMPANY")
	set(&id.ProjectID, "TOOLHOST_PID")
	set(&id.ClientSessionID, ClientSessionEnv)
}

// Files is the sandbox door: every read, listing and write a tool makes of
// the project goes through it, by project-relative name. Reads are allowed
// anywhere inside the project dir (a symlink is followed only while it
// stays inside), writes only inside the agent's allow-list. A tool never
// touches the project by absolute path.
type Files interface {
	// ProjectDir is the absolute project directory, for what must name it
	// to the kernel (a command's confinement); never for reading files.
	ProjectDir() string
	// ReadFile reads a project-relative file (never outside the project).
	ReadFile(rel string) ([]byte, error)
	// ReadDir lists a project-relative directory, sorted by name.
	ReadDir(rel string) ([]fs.DirEntry, error)
	// Stat returns the info of a project-relative file or directory.
	Stat(rel string) (fs.FileInfo, error)
	// Walk walks the tree under a project-relative directory as
	// fs.WalkDir does, with project-relative slash names; symlinks are
	// reported, never descended into.
	Walk(rel string, fn fs.WalkDirFunc) error
	// RealDir is the real absolute path of a project-relative directory
	// (its symlinks resolved, still inside the project), for a process
	// started in it.
	RealDir(rel string) (string, error)
	// WriteFile atomically replaces rel with data.
	WriteFile(rel string, data []byte) error
	// WriteJSON writes v pretty-printed with a trailing newline, atomically.
	WriteJSON(rel string, v any) error
	// WriteFiles writes several files as one decision: every path is checked
	// before any is written, so a refused one leaves all of them as they
	// were. A tool that writes more than one file for one change (a page and
	// its archive, a site's pages and index) uses it instead of asking
	// first with CheckWrite.
	WriteFiles(files []sandbox.File) error
	// AppendFile appends data (whole lines) to rel.
	AppendFile(rel string, data []byte) error
	// Update runs fn on the current content (nil if missing) under a
	// cross-process lock and atomically writes what fn returns.
	Update(rel string, fn func(old []byte) ([]byte, error)) error
	// Lock takes the cross-process lock called name until unlock is called.
	Lock(name string) (unlock func(), err error)
	// CheckWrite reports whether a write to rel would be allowed and the
	// absolute path it resolves to. It answers sandbox_check's question;
	// a tool about to write does not ask it (the write itself is the
	// check, WriteFiles for several files).
	CheckWrite(rel string) (resolved string, err error)
	// MkdirAll creates a project-relative directory inside the allow-list.
	MkdirAll(rel string) error
	// Remove removes a project-relative file inside the allow-list.
	Remove(rel string) error
}

// Events is where a call's events go (the store's events log).
type Events interface {
	Emit(ctx context.Context, e store.Event) error
}

// Timeline is where a call's timeline entries go (the store's timeline).
type Timeline interface {
	Append(ctx context.Context, e store.TimelineEntry) (seq int64, err error)
}

// Clock is the time source; tests use a fake.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// ProgressFunc reports progress of a long call to the client; a no-op when
// the request carried no progressToken. The one in a Ctx passes on only
// increasing progress values, as MCP requires, whatever the transport.
type ProgressFunc func(progress, total float64, message string)

// Services are the shared implementations a session hands to every call.
type Services struct {
	// Files is the agent's door: writes limited to its writeAllowList.
	Files Files
	// Shared is the services' door: writes limited to toolhost's own
	// .toolhost/ (and, with the file store, the shared stores' files).
	// Tools write through it only machine-local records (the integrator's
	// units and port reservations, internal/store/local).
	Shared   Files
	Timeline Timeline
	Events   Events
	Clock    Clock
	Log      zerolog.Logger
	// Procs owns every child process this session starts (the bash
	// tool's commands, the units); the session stops them when it closes.
	Procs procs.Owner
	// Bugs is the project's bug tracker (one per session: the file store
	// keeps its index in memory between calls).
	Bugs store.Bugs
	// Agents keeps the agents' todolists and runtime states.
	Agents store.AgentState
}

// Ctx is what one tool call receives.
type Ctx struct {
	Identity
	CallID     string
	CompanyDir string
	UnitDir    string // project-relative: units/<unit_id>
	Services
	Progress ProgressFunc
	// Settings holds session settings a tool may need (e.g. the agent's
	// sandbox cwd, the env allow-list for placeholders).
	Settings Settings

	// entries counts the call's timeline entries (TimelineEntry.Nth),
	// shared by the copies a retried attempt gets.
	entries *atomic.Int32
}

// Settings are per-session knobs derived from configs.
type Settings struct {
	// Cwd is the agent's working directory (absolute).
	Cwd string
	// WriteAllowList is the agent's allow-list (for messages and checks).
	WriteAllowList []string
	// Sandbox are the agent's sandbox settings: what its commands may
	// touch (internal/confine builds their confinement from it).
	Sandbox agents.Sandbox
	// EnvAllowList names environment variables placeholders may expand.
	EnvAllowList []string
}

// Meta is the _meta object of a tools/call request, as far as toolhost reads it.
type Meta struct {
	CallID        string          `json:"call_id,omitempty"`
	UnitID        string          `json:"unit_id,omitempty"`
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
	// Traceparent and Tracestate are the caller's W3C trace context (MCP's
	// _meta.traceparent and tracestate): the parent of the call's span, and
	// the audit row keeps the traceparent.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
	// ToolUseID is the model's tool_use id the client names the call by
	// (Claude Code's _meta "claudecode/toolUseId"), the one its hooks get
	// as tool_use_id; the audit row keeps it.
	ToolUseID string `json:"-"`
}

// NewCallID returns a new ULID string.
func NewCallID() string {
	return ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader).String()
}

// ValidUnit reports whether u can name a unit directory: 1-64 letters,
// digits, '-', '_' or '.', never "." or "..", so it stays a single path
// segment.
func ValidUnit(u string) bool {
	if u == "" || len(u) > 64 || u == "." || u == ".." {
		return false
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// New builds the Ctx of one call from the session identity, its services and
// the request's _meta.
func New(id Identity, svc Services, settings Settings, meta Meta, progress ProgressFunc) (*Ctx, error) {
	c := &Ctx{Identity: id, Services: svc, Settings: settings, Progress: progress, entries: new(atomic.Int32)}
	if meta.UnitID != "" {
		if !ValidUnit(meta.UnitID) {
			return nil, fmt.Errorf("_meta.unit_id %q: must be 1-64 characters of letters, digits, '-', '_' or '.'", meta.UnitID)
		}
		c.UnitID = meta.UnitID
	}
	c.CallID = meta.CallID
	if c.CallID == "" {
		c.CallID = NewCallID()
	}
	if c.UnitID != "" {
		c.UnitDir = "units/" + c.UnitID
	}
	if c.Company != "" {
		// project dir = data/companies/{cid}/projects/{pid}
		if parent := filepath.Dir(c.ProjectDir); filepath.Base(parent) == "projects" {
			c.CompanyDir = filepath.Dir(parent)
		}
	}
	if c.Progress == nil {
		c.Progress = func(float64, float64, string) {}
	} else {
		c.Progress = increasing(c.Progress)
	}
	return c, nil
}

// increasing drops every progress value not above the last one sent.
func increasing(send ProgressFunc) ProgressFunc {
	var mu sync.Mutex
	last := math.Inf(-1)
	return func(progress, total float64, message string) {
		mu.Lock()
		defer mu.Unlock()
		if progress <= last {
			return
		}
		last = progress
		send(progress, total, message)
	}
}

// Emit appends an event stamped with this call's identity.
func (c *Ctx) Emit(ctx context.Context, kind string, payload any) error {
	return c.Events.Emit(ctx, store.Event{
		TS: c.Clock.Now(), Kind: kind, ProjectID: c.ProjectID, Agent: c.Agent, UnitID: c.UnitID,
		CallID: c.CallID, Session: c.SessionID, Payload: payload,
	})
}

// AppendTimeline appends a timeline entry stamped with this call's identity.
func (c *Ctx) AppendTimeline(ctx context.Context, kind, message string, data any) (int64, error) {
	nth := 0
	if c.entries != nil {
		nth = int(c.entries.Add(1) - 1)
	}
	return c.Timeline.Append(ctx, store.TimelineEntry{
		TS: c.Clock.Now(), ProjectID: c.ProjectID, Agent: c.Agent, UnitID: c.UnitID, CallID: c.CallID,
		SessionID: c.SessionID, Kind: kind, Message: message, Data: data, Nth: nth,
	})
}

// Getenv returns an environment variable if it is on the env allow-list.
func (c *Ctx) Getenv(name string) (string, bool) {
	for _, n := range c.Settings.EnvAllowList {
		if strings.EqualFold(n, name) {
			v, ok := os.LookupEnv(name)
			return v, ok
		}
	}
	return "", false
}
