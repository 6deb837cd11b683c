package store

import "time"

// Event is one line of the events log (.toolhost/events.ndjson in the file
// store): what happened, stamped with who did it.
type Event struct {
	TS        time.Time `json:"ts"`
	Kind      string    `json:"kind"`
	ProjectID string    `json:"pid,omitempty"`
	Agent     string    `json:"agent"`
	UnitID    string    `json:"unit_id,omitempty"`
	CallID    string    `json:"call_id"`
	Session   string    `json:"session_id,omitempty"`
	Payload   any       `json:"payload,omitempty"`
}

// TimelineEntry is one entry of the agents' timeline; Seq is assigned by
// Timeline.Append, strictly increasing per project.
type TimelineEntry struct {
	Seq       int64     `json:"seq"`
	TS        time.Time `json:"ts"`
	ProjectID string    `json:"pid"`
	Agent     string    `json:"agent"`
	UnitID    string    `json:"unit_id"`
	CallID    string    `json:"call_id"`
	SessionID string    `json:"session_id"`
	Kind      string    `json:"kind"`
	Message   string    `json:"message"`
	Data      any       `json:"data"`
	// Nth is the entry's place among the entries of its call (0 for the
	// first): with the call id and the content it identifies the entry, so
	// a retry after a lost answer stores it once. It is not stored.
	Nth int `json:"-"`
}

// Kinds of the events a serving session announces itself with: a live
// view knows from them which servers run now, on any machine.
const (
	EventSessionStart = "session.start"
	EventSessionEnd   = "session.end"
)

// Process is the payload of session.start and session.end: the serving
// process for its whole life, the pid and its start time in clock ticks
// since boot (so a pid reused by another process is not taken for it), and
// the machine it runs on (a pid means nothing on another machine).
type Process struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"`
	StartedAt  time.Time `json:"started_at"`
	Version    string    `json:"version,omitempty"`
	// Host is the machine's name; Boot its boot id
	// (/proc/sys/kernel/random/boot_id), which tells two machines of one
	// name, and one machine before and after a reboot, apart.
	Host string `json:"host,omitempty"`
	Boot string `json:"boot,omitempty"`
}

// TodoItem is one step of an agent's todolist.
type TodoItem struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	DependsOn   []string  `json:"depends_on,omitempty"`
	Status      string    `json:"status"`
	Note        string    `json:"note,omitempty"`
	UpdatedAt   time.Time `json:"updated_at,omitempty"`
}

// Todolist is an agent's todolist (agent-state/<agent>-todo.json in the
// file store).
type Todolist struct {
	Agent       string     `json:"agent"`
	CallID      string     `json:"call_id"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at,omitempty"`
	Items       []TodoItem `json:"items"`
	Current     string     `json:"current"`
	ProgressPct int        `json:"progress_pct"`
}

// RuntimeState is an agent's runtime state
// (agent-state/<agent>-runtime.json in the file store).
type RuntimeState struct {
	Agent     string         `json:"agent"`
	Phase     string         `json:"phase,omitempty"`
	Status    string         `json:"status,omitempty"`
	Message   string         `json:"message,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
	CallID    string         `json:"call_id"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// TodoPath and RuntimePath are where the file store keeps an agent's state,
// relative to the project dir; `toolhost store export` writes the same
// layout, and the tools name these paths in their results.
func TodoPath(agent string) string    { return "agent-state/" + agent + "-todo.json" }
func RuntimePath(agent string) string { return "agent-state/" + agent + "-runtime.json" }

// AgentStateDir holds the agents' states in the file layout.
const AgentStateDir = "agent-state"
