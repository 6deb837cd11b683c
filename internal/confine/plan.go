package confine

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/procs"
)

// Stores are toolhost's own files and directories (project-relative), and
// the rotated files of the logs among them (timeline.000001.ndjson …): only
// toolhost's tools write them, through the sandbox door; no command may,
// whatever its allow-list says. A forged audit row or units.json (which
// names the process groups toolhost signals, in .toolhost/) is exactly what
// confinement is for.
func Stores() []string {
	return []string{".toolhost", "timeline.ndjson", "bugs"}
}

// IsStore reports whether the project-relative path rel is one of Stores
// or inside one.
func IsStore(rel string) bool {
	s, _ := store(path.Clean(rel))
	return s
}

// TempDirVar is the variable that names a command's private temp dir.
const TempDirVar = "TMPDIR"

// Request is one command or unit to confine.
type Request struct {
	// Agent is the agent's template name (for messages).
	Agent string
	// Sandbox are the agent's sandbox settings.
	Sandbox agents.Sandbox
	// ProjectDir is the absolute project directory.
	ProjectDir string
	// Unit is set for a unit started by spawn_units: it binds by the
	// agent's network.unitBind rule instead of network.bind.
	Unit string
	// Port is the unit's own port (the one unitBind "own" allows).
	Port int
	// TempFor, when set, gives the command a private temp dir (writable,
	// Plan.TempDir) named for the process that owns it (PID 0: a detached
	// unit, whose dir is removed by whoever stops it). Remove it with
	// Plan.RemoveTempDir.
	TempFor *procs.Process
	// Mkdir creates a missing directory named by a `dir/**` pattern
	// through the sandbox door; nil leaves a missing root ungranted.
	Mkdir func(rel string) error
	// ReportFile, when set, is one more file the command may write (only
	// write and truncate it): an existing regular file, absolute, in which
	// the hook's rewrite of the CLI's Bash has the command's shell report
	// the directory it ended in. Nothing trusts what is written there.
	ReportFile string
	// Kind selects the variables passed from Environ by default.
	Kind Kind
	// Environ is the environment variables are passed from (nil:
	// toolhost's own).
	Environ []string
	// SetEnv are variables (K=V) the process gets with these values: a
	// unit's own env and PORT, an upstream entry's env.
	SetEnv []string
	// Hold runs the command under a holder that keeps it in the project's
	// live registry while any process of it lives (holder.go); HoldNone
	// runs it directly.
	Hold Hold
	// DecideOnly stops at the verdict (refused, or how it would run)
	// without opening the roots or building a ruleset: the hook's early
	// refusal of a command `toolhost confine` would not run.
	DecideOnly bool
	// Hide are absolute directories the process may not read, list or
	// write beneath, besides toolhost's secrets (secrets.Dir; hide.go).
	Hide []string
}

// Plan is the confinement of one command: what the kernel will enforce, in
// words (the exported fields: the result, the audit row, `toolhost confine
// --explain`) and as a ready Landlock ruleset.
type Plan struct {
	Agent string `json:"agent"`
	// Mode is the agent's sandbox.commands.
	Mode string `json:"mode"`
	// ABI is the Landlock ABI of the ruleset (0: not confined).
	ABI int `json:"abi"`
	// Unconfined says why the command runs without Landlock.
	Unconfined string `json:"unconfined,omitempty"`
	// Write are the write roots: project-relative directories (ending in
	// "/") and files, and $TMPDIR.
	Write []string `json:"write"`
	// Read are the read roots when sandbox.readAllowList limits reads;
	// empty means reads and execution are allowed everywhere.
	Read []string `json:"read,omitempty"`
	// Hidden are the directories nothing of the process may read, list or
	// write beneath (toolhost's secrets).
	Hidden []string `json:"hidden,omitempty"`
	// Skipped are allow-list patterns (or parts of them) that grant
	// commands nothing, each with the reason.
	Skipped []string `json:"skipped,omitempty"`
	// Connect and Bind are the TCP rules ("any", "none" or ports).
	Connect string `json:"connect"`
	Bind    string `json:"bind"`
	// Scoped is true when signals and abstract unix sockets are limited to
	// the command's own domain.
	Scoped bool `json:"scoped"`
	// NotEnforced lists what the agent asked for that this kernel cannot
	// enforce (best-effort only; require refuses instead).
	NotEnforced []string `json:"not_enforced,omitempty"`
	// TempDir is the command's private temp dir ("" when it has none: it
	// runs unconfined, or Request.TempFor was not set).
	TempDir string `json:"temp_dir,omitempty"`
	// Env are the names of the variables the process receives.
	Env []string `json:"env"`

	// env is the process's whole environment.
	env                           []string
	handledFS, handledNet, scoped uint64
	// canFilter is true when the kernel and arch take the seccomp filter;
	// filter is its program (nil: none).
	canFilter bool
	filter    seccompProgram
	rules     []pathRule
	ports     []portRule
	ruleFD    int
	kind      Kind
	// exclFD is a second ruleset, granting every TCP port but those of
	// toolhost's servers (-1: none). With exclByHolder it also scopes
	// signals and abstract sockets, and the holder adds it as its nested
	// layer (instead of the thread adding it and the holder a scope layer
	// of its own): each new domain copies every rule of its parent, so the
	// ~65,000 port rules are copied once per command, not twice.
	exclFD       int
	exclByHolder bool
	// exclFile is exclFD as the holder's descriptor 4 (holderSpec); it
	// owns exclFD once made.
	exclFile *os.File
	// hold is the holder the command runs under, live its registration
	// (nil: none; Close closes this process's copy).
	hold Hold
	live *os.File
}

type pathRule struct {
	name   string
	fd     int
	dir    bool
	access uint64
}

type portRule struct {
	port   int
	access uint64
}

// UnavailableError is a command refused because its agent requires
// confinement and the kernel cannot provide it.
type UnavailableError struct {
	Agent  string
	Reason string
	// Upstream is set for an upstream server's process, whose setting is
	// in the policy file.
	Upstream bool
}

func (e *UnavailableError) Error() string {
	what, where := e.Agent+"'s commands", "sandbox.commands of "+e.Agent+" in the agents file"
	if e.Upstream {
		what, where = e.Agent+"'s process", "sandbox.commands of its entry in the policy file"
	}
	return fmt.Sprintf("%s must run confined by the kernel (sandbox.commands is %q), but %s; "+
		"run toolhost on a kernel that offers it (Linux 6.12 or later with Landlock enabled; `toolhost sandbox probe` shows what this machine offers), "+
		"or set %s to %q (run with what the kernel can enforce, said in every result and audit row) or %q",
		what, agents.CommandsRequire, e.Reason, where, agents.CommandsBestEffort, agents.CommandsOff)
}

// RejectionKind makes the refusal a fault.Rejection.
func (e *UnavailableError) RejectionKind() fault.Kind { return fault.Sandbox }

// Prepare builds the plan of one command. The plan holds an open ruleset:
// Close it when the command has started.
func Prepare(req Request) (*Plan, error) {
	p, err := prepareTemp(req)
	if err != nil || req.Hold == HoldNone || req.DecideOnly {
		return p, err
	}
	if err := p.register(req); err != nil {
		p.Close()
		p.RemoveTempDir()
		return nil, fmt.Errorf("live registry: %w", err)
	}
	return p, nil
}

// prepareTemp is Prepare with the private temp dir, before the holder's
// registration.
func prepareTemp(req Request) (*Plan, error) {
	if req.TempFor == nil || req.Sandbox.Commands == agents.CommandsOff {
		return prepare(req, "", thisMachine())
	}
	tmp, err := NewTempDir(req.TempFor.PID, req.TempFor.StartTicks)
	if err != nil {
		return nil, fmt.Errorf("private temp dir: %w", err)
	}
	p, err := prepare(req, tmp, thisMachine())
	if err != nil || !p.Confined() {
		RemoveTempDir(tmp)
	}
	if err == nil && !p.Confined() {
		p.TempDir = ""
	}
	return p, err
}

// RemoveTempDir removes the command's private temp dir, if it has one.
func (p *Plan) RemoveTempDir() { RemoveTempDir(p.TempDir) }

func prepare(req Request, tmp string, m machine) (*Plan, error) {
	p := &Plan{Agent: req.Agent, Mode: req.Sandbox.Commands, kind: req.Kind, ruleFD: -1, exclFD: -1, Connect: "any", Bind: "any", Write: []string{}}
	if p.Mode == "" {
		p.Mode = agents.CommandsRequire
	}
	p.setEnv(req)
	if p.Mode == agents.CommandsOff {
		p.Unconfined = "sandbox.commands is off for " + req.Agent
		return p, nil
	}
	k := m.landlock
	if k.ABI < 1 && p.Mode == agents.CommandsRequire {
		// Without Landlock (macOS, an old kernel) nothing else of the plan
		// matters: that is the reason to give.
		return p.cannot(k.Reason)
	}
	if err := p.seccompAvailable(m.noFilter); err != nil {
		return nil, err
	}
	if k.ABI < 1 {
		if err := p.buildFilter(); err != nil {
			return nil, err
		}
		return p.cannot(k.Reason)
	}
	return p.landlock(req, k, tmp)
}

// setEnv builds the process's environment (again once the temp dir is
// known).
func (p *Plan) setEnv(req Request) {
	environ := req.Environ
	if environ == nil {
		environ = os.Environ()
	}
	p.env = buildEnv(environ, req.Kind, req.Sandbox.Env, req.SetEnv, p.TempDir)
	p.Env = envNames(p.env)
}

// seccompAvailable checks that the system takes the filter every confined
// process gets (seccomp_linux.go; noFilter says why not, "" when it does):
// without it io_uring and TIOCSTI stay open, so require refuses and
// best-effort says so.
func (p *Plan) seccompAvailable(noFilter string) error {
	if noFilter == "" {
		p.canFilter = true
		return nil
	}
	what := "io_uring and TIOCSTI are not refused (" + noFilter + ")"
	if p.Mode == agents.CommandsRequire {
		return &UnavailableError{Agent: p.Agent, Reason: what, Upstream: p.kind == KindUpstream}
	}
	p.NotEnforced = append(p.NotEnforced, what)
	return nil
}

// cannot is a plan the kernel cannot enforce at all.
func (p *Plan) cannot(reason string) (*Plan, error) {
	if p.Mode == agents.CommandsRequire {
		return nil, &UnavailableError{Agent: p.Agent, Reason: reason, Upstream: p.kind == KindUpstream}
	}
	p.ABI, p.Unconfined = 0, reason
	return p, nil
}

// Close releases the rulesets. Safe to call twice.
func (p *Plan) Close() {
	p.closeRules()
	if p.live != nil {
		p.live.Close()
		p.live = nil
	}
	if p.exclFile != nil {
		p.exclFile.Close()
		p.exclFile, p.exclFD = nil, -1
	}
	for _, fd := range []*int{&p.ruleFD, &p.exclFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (p *Plan) closeRules() {
	for _, r := range p.rules {
		unix.Close(r.fd)
	}
	p.rules = nil
}

// Confined reports whether the command will run under Landlock.
func (p *Plan) Confined() bool { return p.Unconfined == "" }

// String is the plan in one line, for the audit row.
func (p *Plan) String() string { return p.Report().String() }

// splitPattern reads a pattern as "prefix/**" (tree) or a single path with
// no "**" (not tree). ok is false for any other shape.
func splitPattern(pat string) (prefix string, tree, ok bool) {
	segs := strings.Split(pat, "/")
	last := len(segs) - 1
	for i, s := range segs {
		if s == "**" && i != last {
			return "", false, false
		}
		if strings.Contains(s, "**") && s != "**" {
			return "", false, false
		}
	}
	if segs[last] == "**" {
		return path.Clean(strings.Join(segs[:last], "/")), true, true
	}
	return path.Clean(pat), false, !hasMeta(pat)
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }

// store says whether rel is a store or inside one, and which store lies
// strictly inside rel (if any).
func store(rel string) (isStore bool, inside []string) {
	for _, s := range Stores() {
		switch {
		case within(rel, s), ndjson.IsRotation(s, rel):
			// A store's rotated files (timeline.000001.ndjson) are stores too.
			return true, nil
		case within(s, rel):
			inside = append(inside, s)
		}
	}
	return false, inside
}

// within reports whether a is b or lies beneath it (both clean and
// project-relative, "." for the project dir).
func within(a, b string) bool {
	return a == b || b == "." || strings.HasPrefix(a, b+"/")
}

// Describe says, for the agents doc, what one writeAllowList pattern grants
// commands, without looking at a project.
func Describe(pat string) string {
	prefix, tree, ok := splitPattern(pat)
	if s, inside := store(prefix); ok && s {
		return "nothing (toolhost's own store)"
	} else if ok && len(inside) > 0 && tree {
		return fmt.Sprintf("the entries of `%s/` except %s", prefix, strings.Join(quoted(inside), ", "))
	}
	switch {
	case !ok:
		return "nothing (only toolhost's tools write it)"
	case tree && hasMeta(prefix):
		return "each existing `" + prefix + "/`"
	case tree:
		return "`" + prefix + "/`"
	}
	return "`" + prefix + "` (if it exists)"
}

func quoted(list []string) []string {
	out := slices.Clone(list)
	for i, s := range out {
		out[i] = "`" + s + "`"
	}
	return out
}

// Command is the spec of a process confined by the plan: its whole
// environment (Environ) and the restriction of the thread that forks it
// (Restrict: capabilities, no_new_privs, seccomp, Landlock). Every path
// that starts a confined process (the bash tool, spawn_units, upstream
// servers, `toolhost confine`) builds its spec here and starts it through
// procs, which gives every child its own session and only descriptors 0-2.
func (p *Plan) Command(name string, argv []string, dir string) procs.Spec {
	spec := procs.Spec{Name: name, Argv: argv, Dir: dir, Env: p.Environ(), Confine: p.Restrict}
	if p.live != nil {
		return p.holderSpec(spec)
	}
	return spec
}

// Environ is the process's whole environment: what passed from toolhost's
// (Plan.Env names it), the caller's own values and the private temp dir.
func (p *Plan) Environ() []string { return slices.Clone(p.env) }

// Report is how a command was confined, as a tool's result shows it.
type Report struct {
	Confined    bool     `json:"confined" jsonschema_description:"true when the kernel (Landlock) confined the command"`
	ABI         int      `json:"abi,omitempty" jsonschema_description:"the Landlock ABI of the confinement"`
	Unconfined  string   `json:"unconfined,omitempty" jsonschema_description:"why the command ran without confinement (sandbox.commands is best-effort or off)"`
	Write       []string `json:"write,omitempty" jsonschema_description:"where the command could write: project-relative directories (ending in /) and files, and $TMPDIR (its private temp dir, removed afterwards); everything else was refused by the kernel"`
	Read        []string `json:"read,omitempty" jsonschema_description:"where the command could read when the agent limits reads (readAllowList); empty: everywhere"`
	Hidden      []string `json:"hidden,omitempty" jsonschema_description:"directories the command could not read, list or write beneath (toolhost's secrets); nor could it list the directories on the way to them"`
	Skipped     []string `json:"skipped,omitempty" jsonschema_description:"allow-list patterns that commands cannot write, and why (toolhost's tools write them)"`
	Connect     string   `json:"connect,omitempty" jsonschema_description:"TCP ports the command could connect to: any, none or a list"`
	Bind        string   `json:"bind,omitempty" jsonschema_description:"TCP ports the command could listen on: any, none or a list"`
	Scoped      bool     `json:"scoped,omitempty" jsonschema_description:"true when the command could not signal, or reach through abstract unix sockets, any process outside itself"`
	NotEnforced []string `json:"not_enforced,omitempty" jsonschema_description:"what this machine's kernel could not enforce"`
	Env         []string `json:"env,omitempty" jsonschema_description:"the environment variables the command received (names only); sandbox.env of the agent passes more"`
}

// Report is the plan as a result shows it.
func (p *Plan) Report() Report {
	if !p.Confined() {
		return Report{Unconfined: p.Unconfined, NotEnforced: p.NotEnforced, Env: p.Env}
	}
	return Report{Confined: true, ABI: p.ABI, Write: p.Write, Read: p.Read, Hidden: p.Hidden, Skipped: p.Skipped,
		Connect: p.Connect, Bind: p.Bind, Scoped: p.Scoped, NotEnforced: p.NotEnforced, Env: p.Env}
}

// String is the report in one line, for the audit row.
func (r Report) String() string {
	if !r.Confined {
		return "unconfined: " + r.Unconfined + r.envWords()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "landlock abi %d; write %s", r.ABI, strings.Join(r.Write, " "))
	if len(r.Write) == 0 {
		b.WriteString("nothing")
	}
	if len(r.Read) > 0 {
		fmt.Fprintf(&b, "; read %s", strings.Join(r.Read, " "))
	}
	if len(r.Hidden) > 0 {
		fmt.Fprintf(&b, "; hidden %s", strings.Join(r.Hidden, " "))
	}
	fmt.Fprintf(&b, "; connect %s; bind %s", r.Connect, r.Bind)
	if r.Scoped {
		b.WriteString("; signals scoped")
	}
	for _, s := range r.NotEnforced {
		b.WriteString("; not enforced: " + s)
	}
	b.WriteString(r.envWords())
	return b.String()
}

func (r Report) envWords() string {
	return "; env " + strings.Join(r.Env, " ")
}
