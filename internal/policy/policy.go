package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/rs/zerolog"

	"github.com/toolhost/toolhost/configs"
	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/rules"
	"github.com/toolhost/toolhost/internal/tool"
)

// Permissions a rule may name. Anything else means deny.
const (
	Read  = "read"
	Write = "write"
	Deny  = "deny"
)

// Rule is one tool's entry in the policy file.
type Rule struct {
	Permission string `json:"permission"`
	TimeoutMS  int    `json:"timeout_ms,omitempty"`
	MaxRetries int    `json:"max_retries,omitempty"`
	Confirm    bool   `json:"confirm,omitempty"`
}

// Upstream is an MCP server whose tools toolhost offers through its gate.
type Upstream struct {
	Name               string            `json:"name"`
	Transport          string            `json:"transport"`
	Command            string            `json:"command,omitempty"`
	Args               []string          `json:"args,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	URL                string            `json:"url,omitempty"`
	Headers            map[string]string `json:"headers,omitempty"`
	DiscoveryTimeoutMS int               `json:"discovery_timeout_ms,omitempty"`
	CallTimeoutMS      int               `json:"call_timeout_ms,omitempty"`
	// Pin says what happens to a tool the server did not offer when it was
	// first pinned: withheld until approved (PinStrict, the default) or
	// pinned as it is first seen (PinTrustNew). A changed definition is
	// withheld either way.
	Pin string `json:"pin,omitempty"`
	// MaxFailures is how many consecutive failures (a call timeout, a
	// lost connection, a failed health probe) make toolhost kill and
	// restart the server (default 2).
	MaxFailures int `json:"max_failures,omitempty"`
	// PingIntervalMS is how often an idle stdio server is probed with a
	// ping (default 15000).
	PingIntervalMS int `json:"ping_interval_ms,omitempty"`
	// Sandbox is what a stdio server's process may do, held by the kernel
	// like an agent's commands; left out, it writes only its private temp
	// dir, reads everywhere but toolhost's secrets, connects and listens
	// nowhere, and gets PATH, HOME, LANG and its env.
	Sandbox UpstreamSandbox `json:"sandbox,omitzero"`
}

// UpstreamSandbox is the confinement of a stdio upstream's process.
type UpstreamSandbox struct {
	// Write are the paths it may write besides its private temp dir
	// ($TMPDIR): absolute, or relative to the project dir; "dir/**" for a
	// directory tree. toolhost's own stores are never writable.
	Write []string `json:"write,omitempty"`
	// Read, when set, limits what it may read and execute to these paths
	// (as an agent's readAllowList) besides the system directories a
	// program needs; left out, it reads everywhere but toolhost's secrets.
	Read []string `json:"read,omitempty"`
	// Connect and Bind are the TCP ports it may connect to and listen on:
	// "any" or a list (default: none).
	Connect agents.Ports `json:"connect,omitzero"`
	Bind    agents.Ports `json:"bind,omitzero"`
	// Env are variables (names, or patterns such as GITHUB_*) passed from
	// toolhost's environment besides PATH, HOME and LANG; the entry's env
	// sets more. A pattern never passes a credential-looking name.
	Env []string `json:"env,omitempty"`
	// Commands is what happens when the kernel cannot confine it:
	// "require" (the default: it does not start), "best-effort" or "off",
	// as an agent's sandbox.commands.
	Commands string `json:"commands,omitempty"`
}

// Agent returns the sandbox as the confinement reads an agent's, with the
// defaults filled in.
func (s UpstreamSandbox) Agent() agents.Sandbox {
	none := agents.Ports{List: []int{}}
	n := agents.Network{Connect: s.Connect, Bind: s.Bind}
	if n.Connect.IsZero() {
		n.Connect = none
	}
	if n.Bind.IsZero() {
		n.Bind = none
	}
	mode := s.Commands
	if mode == "" {
		mode = agents.CommandsRequire
	}
	return agents.Sandbox{WriteAllowList: s.Write, ReadAllowList: s.Read, Network: n.WithDefaults(), Env: s.Env, Commands: mode}
}

func (s UpstreamSandbox) check() error {
	for _, p := range append(slices.Clone(s.Write), s.Read...) {
		if !doublestar.ValidatePattern(p) {
			return fmt.Errorf("sandbox: %q is not a valid path pattern", p)
		}
	}
	for _, p := range s.Env {
		if err := agents.ValidEnvPattern(p); err != nil {
			return fmt.Errorf("sandbox.%w", err)
		}
	}
	if s.Connect.Own || s.Bind.Own {
		return errors.New(`sandbox: connect and bind take "any" or a list of ports`)
	}
	switch s.Commands {
	case "", agents.CommandsRequire, agents.CommandsBestEffort, agents.CommandsOff:
	default:
		return fmt.Errorf("sandbox.commands %q must be %q, %q or %q", s.Commands, agents.CommandsRequire, agents.CommandsBestEffort, agents.CommandsOff)
	}
	return nil
}

// Pin settings of an upstream.
const (
	PinStrict   = "strict"
	PinTrustNew = "trust-new"
)

// File is the parsed policy document.
type File struct {
	Tools        map[string]Rule `json:"tools"`
	Upstream     []Upstream      `json:"upstream,omitempty"`
	EnvAllowList []string        `json:"env_allowlist,omitempty"`
	// ConfirmTTLMS bounds how long a pending confirmation waits for a human
	// and an approval waits for its call (default 10 minutes).
	ConfirmTTLMS int `json:"confirm_ttl_ms,omitempty"`
	// Rules are ordered rules on the arguments of a call (CEL), applied
	// after schema validation and before confirmation; the first that
	// matches decides (internal/rules).
	Rules []rules.Rule `json:"rules,omitempty"`

	ruleSet *rules.Set
}

// RuleSet is the file's rules, compiled when the file was parsed.
func (f *File) RuleSet() *rules.Set { return f.ruleSet }

// DefaultConfirmTTL applies when the file sets no confirm_ttl_ms.
const DefaultConfirmTTL = 10 * time.Minute

// ConfirmTTL is the confirmation lifetime under f.
func (f *File) ConfirmTTL() time.Duration {
	if f.ConfirmTTLMS > 0 {
		return time.Duration(f.ConfirmTTLMS) * time.Millisecond
	}
	return DefaultConfirmTTL
}

// Parse parses and checks a policy document, its rules compiled without
// knowing any tool's schema (every args untyped) or the project dir.
func Parse(data []byte) (*File, error) { return ParseWith(data, rules.Options{}) }

// ParseWith parses and checks a policy document and compiles its rules
// against o. A rule that does not compile makes the document invalid: the
// error is then a *rules.CompileError (errors.As) naming each rule, its
// position and what is wrong.
func ParseWith(data []byte, o rules.Options) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("policy file: trailing data after the JSON object")
	}
	if f.Tools == nil {
		return nil, fmt.Errorf("policy file: missing \"tools\" object")
	}
	for name, r := range f.Tools {
		if r.TimeoutMS < 0 || r.MaxRetries < 0 {
			return nil, fmt.Errorf("policy file: tools.%s: timeout_ms and max_retries must not be negative", name)
		}
	}
	if f.ConfirmTTLMS < 0 {
		return nil, fmt.Errorf("policy file: confirm_ttl_ms must not be negative")
	}
	seen := map[string]bool{}
	for i, u := range f.Upstream {
		if !tool.ValidName(u.Name) || seen[u.Name] {
			return nil, fmt.Errorf("policy file: upstream[%d]: name %q must be unique and match %s", i, u.Name, tool.NamePattern())
		}
		seen[u.Name] = true
		switch u.Transport {
		case "stdio":
			if u.Command == "" {
				return nil, fmt.Errorf("policy file: upstream %s: stdio needs a command", u.Name)
			}
		case "http":
			if u.URL == "" {
				return nil, fmt.Errorf("policy file: upstream %s: http needs a url", u.Name)
			}
		default:
			return nil, fmt.Errorf("policy file: upstream %s: transport must be stdio or http, not %q", u.Name, u.Transport)
		}
		if u.Pin != "" && u.Pin != PinStrict && u.Pin != PinTrustNew {
			return nil, fmt.Errorf("policy file: upstream %s: pin must be %q or %q, not %q", u.Name, PinStrict, PinTrustNew, u.Pin)
		}
		if u.DiscoveryTimeoutMS < 0 || u.CallTimeoutMS < 0 || u.MaxFailures < 0 || u.PingIntervalMS < 0 {
			return nil, fmt.Errorf("policy file: upstream %s: discovery_timeout_ms, call_timeout_ms, max_failures and ping_interval_ms must not be negative", u.Name)
		}
		if err := u.Sandbox.check(); err != nil {
			return nil, fmt.Errorf("policy file: upstream %s: %w", u.Name, err)
		}
	}
	set, err := rules.Compile(f.Rules, o)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	f.ruleSet = set
	return &f, nil
}

// Decision is what the policy says about one call.
type Decision struct {
	Permission string
	Timeout    time.Duration
	MaxRetries int
	Confirm    bool
	// ConfirmTTL is the file's confirmation lifetime (see File.ConfirmTTL).
	ConfirmTTL time.Duration
	Listed     bool
}

// Allowed reports whether the permission lets the tool run.
func (d Decision) Allowed() bool { return d.Permission == Read || d.Permission == Write }

// DefaultTimeout applies when neither the policy nor the tool names one.
const DefaultTimeout = 30 * time.Second

// Policy is the live policy, reloaded when its file changes.
type Policy struct {
	path  string
	log   zerolog.Logger
	rules rules.Options
	cur   atomic.Pointer[File]

	mu    sync.Mutex
	mtime time.Time
	size  int64
}

// Load reads the policy at path; an empty path means the embedded default
// (never reloaded). A broken first load leaves an empty policy and logs
// tool_policy_invalid. Its rules are compiled without knowing the tools'
// schemas (every args untyped), so a rule misreading a tool's argument
// passes here; what serves or shows a policy loads it with LoadWith and
// the tools' schemas, as serve does.
func Load(path string, log zerolog.Logger) *Policy { return LoadWith(path, log, rules.Options{}) }

// LoadWith is Load with the rules compiled against o (the tools whose
// schemas type args, the project dir), at every load and reload.
func LoadWith(path string, log zerolog.Logger, o rules.Options) *Policy {
	p := &Policy{path: path, log: log, rules: o}
	if path == "" {
		f, err := ParseWith(configs.ToolsJSON, o)
		if err != nil {
			panic("embedded tools.json: " + err.Error())
		}
		p.cur.Store(f)
		return p
	}
	p.cur.Store(&File{Tools: map[string]Rule{}, ruleSet: &rules.Set{}})
	p.reload(true)
	return p
}

// Path is the watched file ("" for the embedded default).
func (p *Policy) Path() string { return p.path }

// Current returns the policy in force, re-reading the file first if its mtime
// or size changed. A call keeps the *File it got, so a reload never affects a
// running call.
func (p *Policy) Current() *File {
	if p.path != "" {
		p.reload(false)
	}
	return p.cur.Load()
}

func (p *Policy) reload(first bool) {
	fi, err := os.Stat(p.path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if first {
			p.log.Error().Str("event", "tool_policy_invalid").Str("path", p.path).Err(err).Msg("policy file unreadable; using an empty policy")
		}
		return
	}
	if !first && fi.ModTime().Equal(p.mtime) && fi.Size() == p.size {
		return
	}
	p.mtime, p.size = fi.ModTime(), fi.Size()
	data, err := os.ReadFile(p.path)
	var f *File
	if err == nil {
		f, err = ParseWith(data, p.rules)
	}
	if err != nil {
		p.log.Error().Str("event", "tool_policy_invalid").Str("path", p.path).Err(err).Msg("policy file rejected; keeping the last good policy")
		return
	}
	p.cur.Store(f)
	if !first {
		p.log.Info().Str("event", "tool_policy_reloaded").Str("path", p.path).Int("tools", len(f.Tools)).Int("rules", len(f.Rules)).Msg("policy reloaded")
	}
}

// Decide returns the decision for a tool under f. Built-in tools missing from
// the file get the defaults their spec declares; upstream tools missing from
// it are denied.
func (f *File) Decide(s *tool.Spec) Decision {
	r, listed := f.Tools[s.Name]
	if !listed {
		if s.Source != "" && s.Source != "builtin" {
			return Decision{Permission: Deny, Timeout: DefaultTimeout}
		}
		r = Rule{Permission: s.Effect.String()}
	}
	d := Decision{Permission: r.Permission, MaxRetries: r.MaxRetries, Confirm: r.Confirm, ConfirmTTL: f.ConfirmTTL(), Listed: listed}
	switch {
	case r.TimeoutMS > 0:
		d.Timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	case s.Timeout > 0:
		d.Timeout = s.Timeout
	default:
		d.Timeout = DefaultTimeout
	}
	if !d.Allowed() {
		d.Permission = Deny
	}
	if d.Permission != Read {
		d.MaxRetries = 0
	}
	return d
}
