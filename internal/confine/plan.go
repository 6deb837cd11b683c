package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/ndjson"
	"github.com/toolhost/toolhost/internal/procs"
	"github.com/toolhost/toolhost/internal/secrets"
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
	filter    []unix.SockFilter
	rules     []pathRule
	ports     []portRule
	ruleFD    int
	kind      Kind
	// exclFD is a second ruleset, granting every TCP port but those of
	// toolhost's servers (-1: none).
	exclFD int
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
		return prepare(req, "")
	}
	tmp, err := NewTempDir(req.TempFor.PID, req.TempFor.StartTicks)
	if err != nil {
		return nil, fmt.Errorf("private temp dir: %w", err)
	}
	p, err := prepare(req, tmp)
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

func prepare(req Request, tmp string) (*Plan, error) {
	p := &Plan{Agent: req.Agent, Mode: req.Sandbox.Commands, kind: req.Kind, ruleFD: -1, exclFD: -1, Connect: "any", Bind: "any", Write: []string{}}
	if p.Mode == "" {
		p.Mode = agents.CommandsRequire
	}
	p.setEnv(req)
	if p.Mode == agents.CommandsOff {
		p.Unconfined = "sandbox.commands is off for " + req.Agent
		return p, nil
	}
	if err := p.seccompAvailable(); err != nil {
		return nil, err
	}
	k := Detect()
	if k.ABI < 1 {
		if err := p.buildFilter(); err != nil {
			return nil, err
		}
		return p.cannot(k.Reason)
	}
	p.ABI = k.ABI
	p.network(req, k)
	p.older(k)
	if p.Mode == agents.CommandsRequire && len(p.NotEnforced) > 0 {
		p.Close()
		return nil, &UnavailableError{Agent: p.Agent, Reason: "this kernel cannot enforce all of it: " + strings.Join(p.NotEnforced, "; "), Upstream: p.kind == KindUpstream}
	}
	if err := p.buildFilter(); err != nil {
		p.Close()
		return nil, err
	}
	if req.DecideOnly {
		return p, nil
	}
	p.TempDir = tmp
	p.setEnv(req)
	if err := p.files(req); err != nil {
		p.Close()
		return nil, err
	}
	fd, err := p.ruleset()
	p.closeRules()
	if err != nil {
		return nil, err
	}
	p.ruleFD = fd
	return p, nil
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

// seccompAvailable checks that the kernel and arch take the filter every
// confined process gets (seccomp.go): without it io_uring and TIOCSTI stay
// open, so require refuses and best-effort says so.
func (p *Plan) seccompAvailable() error {
	arch := nativeArch()
	if arch != 0 && seccompUsable() {
		p.canFilter = true
		return nil
	}
	what := "io_uring and TIOCSTI are not refused (this kernel has no seccomp filters)"
	if arch == 0 {
		what = fmt.Sprintf("io_uring and TIOCSTI are not refused (no seccomp filter is written for %s)", runtime.GOARCH)
	}
	if p.Mode == agents.CommandsRequire {
		return &UnavailableError{Agent: p.Agent, Reason: what, Upstream: p.kind == KindUpstream}
	}
	p.NotEnforced = append(p.NotEnforced, what)
	return nil
}

// buildFilter writes the filter, refusing the sockets TCP rules would not
// see whenever the plan has any.
func (p *Plan) buildFilter() error {
	if !p.canFilter {
		return nil
	}
	prog, err := commandFilter(nativeArch(), filterOptions{tcpOnly: p.handledNet != 0 || p.exclFD >= 0})
	if err != nil {
		return err
	}
	p.filter = prog
	return nil
}

// older lists what an older ABI leaves out of every plan (require
// refuses the command for any of it, best-effort runs without it).
func (p *Plan) older(k Kernel) {
	for _, f := range []struct {
		abi  int
		what string
	}{
		{2, "linking and renaming into a root from outside (refer)"},
		{3, "truncating files outside the roots"},
		{5, "ioctl on devices other than /dev/null, /dev/tty …"},
		{abiScoped, "scoping signals and abstract unix sockets to the command, so it could signal toolhost or any process of this user"},
	} {
		if p.ABI < f.abi {
			p.NotEnforced = append(p.NotEnforced, fmt.Sprintf("%s needs Landlock ABI %d; %s", f.what, f.abi, abiWords(k)))
		}
	}
	if p.ABI >= abiScoped {
		p.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		p.Scoped = true
	}
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

// network sets the TCP rules: the agent's connect rule, and its bind rule
// for a command or unitBind for a unit; and keeps toolhost's own servers
// out of reach (servers.go).
func (p *Plan) network(req Request, k Kernel) {
	n := req.Sandbox.Network.WithDefaults()
	bind := n.Bind
	if req.Unit != "" {
		bind = n.UnitBind
		if bind.Own {
			bind = agents.Ports{}
			if req.Port > 0 {
				bind.List = []int{req.Port}
			}
		}
	}
	var servers []int
	if !n.ReachToolhost {
		servers = serverPorts()
	}
	connect := n.Connect
	if !connect.Any {
		connect.List = slices.DeleteFunc(slices.Clone(connect.List), func(port int) bool { return slices.Contains(servers, port) })
	}
	exclude := connect.Any && len(servers) > 0
	if connect.Any && bind.Any && !exclude {
		return
	}
	p.Connect, p.Bind = portWords(connect), portWords(bind)
	if exclude {
		p.Connect = "any except toolhost's servers " + agents.Ports{List: servers}.String()
	}
	if p.ABI < abiNet || !p.canFilter {
		what := fmt.Sprintf("TCP rules (connect %s, bind %s) need Landlock ABI %d; %s", p.Connect, p.Bind, abiNet, abiWords(k))
		if !p.canFilter {
			what = fmt.Sprintf("TCP rules (connect %s, bind %s) cannot be held without a seccomp filter (MPTCP sockets pass them)", p.Connect, p.Bind)
		}
		p.NotEnforced = append(p.NotEnforced, what)
		p.Connect, p.Bind = "any", "any"
		return
	}
	add := func(r agents.Ports, right uint64) {
		if r.Any {
			return
		}
		p.handledNet |= right
		for _, port := range r.List {
			p.ports = append(p.ports, portRule{port: port, access: right})
		}
	}
	add(connect, unix.LANDLOCK_ACCESS_NET_CONNECT_TCP)
	add(bind, unix.LANDLOCK_ACCESS_NET_BIND_TCP)
	if exclude && !req.DecideOnly {
		fd, err := excludingRuleset(servers)
		if err != nil {
			p.NotEnforced = append(p.NotEnforced, "keeping toolhost's servers out of reach: "+err.Error())
			p.Connect = "any"
			return
		}
		p.exclFD = fd
	}
}

func portWords(r agents.Ports) string {
	if r.Any {
		return "any"
	}
	return r.String()
}

func abiWords(k Kernel) string {
	if k.Reason != "" {
		return k.Reason
	}
	return fmt.Sprintf("this kernel offers ABI %d", k.KernelABI)
}

// files opens every root the plan grants and sets the handled rights.
func (p *Plan) files(req Request) error {
	s := req.Sandbox
	hide := slices.Clone(req.Hide)
	if dir, err := secrets.Dir(); err == nil {
		hide = append(hide, dir)
	} else {
		// toolhost keeps no secret where it cannot locate a safe
		// directory (secrets refuses to use it), so there is none to hide.
		p.Skipped = append(p.Skipped, "toolhost's secrets directory: "+err.Error())
	}
	hidden := resolveHidden(hide)
	// Reads are handled when the agent limits them or something must stay
	// unreadable; then every root grants reading too.
	restrictRead := s.ReadAllowList != nil || len(hidden) > 0
	p.handledFS = fsRights(p.ABI)
	extra := uint64(readRights)
	if !restrictRead {
		p.handledFS &^= readRights
		extra = 0
	}
	proj, err := unix.Open(req.ProjectDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open project dir %s: %w", req.ProjectDir, err)
	}
	defer unix.Close(proj)
	b := &builder{plan: p, proj: proj}
	for _, pat := range s.WriteAllowList {
		b.writePattern(pat, dirWrite|extra, fileWrite|extra, req.Mkdir)
	}
	if p.TempDir != "" {
		if err := b.absolute(p.TempDir, "$"+TempDirVar, dirWrite|extra); err != nil {
			return fmt.Errorf("private temp dir: %w", err)
		}
		p.Write = append(p.Write, "$"+TempDirVar)
	}
	if req.ReportFile != "" {
		if err := b.reportFile(req.ReportFile, fileWrite|extra); err != nil {
			return fmt.Errorf("report file %s: %w", req.ReportFile, err)
		}
		p.Write = append(p.Write, req.ReportFile)
	}
	devices := fileWrite | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | extra
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		_ = b.absolute(d, d, devices)
	}
	switch {
	case s.ReadAllowList != nil:
		p.Read = []string{}
		for _, d := range systemReadDirs() {
			_ = b.absolute(d, "", readRights)
		}
		for _, pat := range s.ReadAllowList {
			b.readPattern(pat)
		}
	case restrictRead:
		// Everything, less what hide carves out below.
		_ = b.absolute("/", "", readRights)
	}
	b.hide(hidden)
	p.Hidden = hidden
	return nil
}

// systemReadDirs are what a program needs to run when reads are limited:
// the system's programs, libraries and configuration, the PATH and
// toolhost itself.
func systemReadDirs() []string {
	dirs := []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys", "/dev", "/run"}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, exe)
	}
	return dirs
}

// maxRules bounds how many roots one plan opens (a pattern over a huge
// tree must not make a command's start cost grow without bound).
const maxRules = 1024

// builder opens the roots of one plan.
type builder struct {
	plan *Plan
	proj int
	// carved counts the rules hide added.
	carved int
}

// beneath is how a root inside the project is opened: never through a
// symlink, never out of the project.
var beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func (b *builder) skip(format string, args ...any) {
	b.plan.Skipped = append(b.plan.Skipped, fmt.Sprintf(format, args...))
}

// writePattern grants what one writeAllowList pattern can express.
func (b *builder) writePattern(pat string, dirAccess, fileAccess uint64, mkdir func(string) error) {
	if filepath.IsAbs(pat) {
		b.writeAbsolute(pat, dirAccess, fileAccess)
		return
	}
	prefix, tree, ok := splitPattern(pat)
	switch {
	case !ok:
		b.skip("%s: Landlock grants whole directories or single files and this pattern is neither, so only toolhost's tools write it", pat)
	case tree && !hasMeta(prefix):
		b.writeDir(pat, prefix, dirAccess, fileAccess, mkdir)
	case tree:
		dirs := b.expand(prefix)
		if len(dirs) == 0 {
			b.skip("%s: no directory matches %s yet", pat, prefix)
		}
		for _, d := range dirs {
			b.writeDir(pat, d, dirAccess, fileAccess, nil)
		}
	default:
		b.writeFile(pat, prefix, fileAccess)
	}
}

// writeAbsolute grants an absolute write pattern (an upstream server's
// sandbox.write): a path or path/**, opened as named. Inside the project it
// is the project-relative pattern, so toolhost's stores stay out; a
// directory that holds the project grants everything around it, and the
// project as "**" (its stores carved out).
func (b *builder) writeAbsolute(pat string, dirAccess, fileAccess uint64) {
	prefix, tree, ok := splitPattern(pat)
	if !ok || hasMeta(prefix) {
		b.skip("%s: an absolute pattern must be a path or path/**", pat)
		return
	}
	proj, err := fdPath(b.proj)
	if err != nil {
		b.skip("%s: the project dir cannot be located: %v", pat, err)
		return
	}
	real, err := filepath.EvalSymlinks(prefix)
	if err != nil {
		b.skip("%s: %v", pat, err)
		return
	}
	if beneathPath(real, proj) {
		rel, _ := filepath.Rel(proj, real)
		if tree {
			rel = path.Join(filepath.ToSlash(rel), "**")
		}
		b.writePattern(rel, dirAccess, fileAccess, nil)
		return
	}
	access := fileAccess
	if tree {
		access = dirAccess
	}
	n := len(b.plan.rules)
	if err := b.absolute(real, "", access); err != nil {
		b.skip("%s: %v", pat, err)
		return
	}
	r := b.plan.rules[n]
	if !r.dir && (tree || !regularSingleLink(r.fd)) {
		b.plan.rules = b.plan.rules[:n]
		unix.Close(r.fd)
		b.skip("%s: %s is not a directory, or not a regular file with a single link", pat, real)
		return
	}
	if r.dir && !tree {
		b.plan.rules = b.plan.rules[:n]
		unix.Close(r.fd)
		b.skip("%s: %s is a directory; write %s/** to grant it", pat, real, prefix)
		return
	}
	name := real
	if r.dir {
		name += "/"
	}
	b.plan.Write = append(b.plan.Write, name)
	if r.dir && beneathPath(proj, real) {
		b.plan.rules = b.plan.rules[:n]
		b.around(r, real, []string{proj})
		unix.Close(r.fd)
		b.writeDir(pat, ".", dirAccess, fileAccess, nil)
	}
}

func regularSingleLink(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1
}

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

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func (b *builder) writeDir(pat, rel string, dirAccess, fileAccess uint64, mkdir func(string) error) {
	if s, _ := store(rel); s {
		b.skip("%s: %s is toolhost's own store; only toolhost's tools write it", pat, rel)
		return
	}
	if mkdir != nil && rel != "." {
		if err := unix.Faccessat(b.proj, rel, unix.F_OK, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			if err := mkdir(rel); err != nil {
				b.skip("%s: %s could not be created: %v", pat, rel, err)
				return
			}
		}
	}
	if _, inside := store(rel); len(inside) > 0 {
		b.carve(pat, rel, inside, dirAccess, fileAccess)
		return
	}
	b.open(pat, rel, true, dirAccess)
}

func (b *builder) writeFile(pat, rel string, fileAccess uint64) {
	if s, _ := store(rel); s {
		b.skip("%s: %s is toolhost's own store; only toolhost's tools write it", pat, rel)
		return
	}
	b.open(pat, rel, false, fileAccess)
}

// carve grants the entries of rel except the stores inside it (descending
// towards a store deeper down); rel itself gets no rule, so nothing new can
// be created directly in it.
func (b *builder) carve(pat, rel string, stores []string, dirAccess, fileAccess uint64) {
	entries, err := b.list(rel)
	if err != nil {
		b.skip("%s: %s: %v", pat, rel, err)
		return
	}
	where := rel + "/"
	if rel == "." {
		where = "the project dir"
	}
	b.skip("%s: nothing new can be created directly in %s (it holds toolhost's stores %s); its other entries are writable",
		pat, where, strings.Join(stores, ", "))
	for _, e := range entries {
		child := join(rel, e.Name())
		if s, inside := store(child); s {
			continue
		} else if len(inside) > 0 {
			if e.Type().IsDir() {
				b.carve(pat, child, inside, dirAccess, fileAccess)
			}
			continue
		}
		switch {
		case e.Type().IsDir():
			b.open(pat, child, true, dirAccess)
		case e.Type().IsRegular():
			b.open(pat, child, false, fileAccess)
		}
	}
}

// list reads the entries of a directory beneath the project.
func (b *builder) list(rel string) ([]fs.DirEntry, error) {
	fd, err := unix.Openat2(b.proj, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: uint64(beneath)})
	if err != nil {
		return nil, openErr(err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return f.ReadDir(-1)
}

// expand returns the existing directories (never through a symlink) that
// match a prefix with glob segments.
func (b *builder) expand(prefix string) []string {
	cur := []string{"."}
	for _, seg := range strings.Split(prefix, "/") {
		var next []string
		for _, dir := range cur {
			if !hasMeta(seg) {
				c := join(dir, seg)
				if fd, err := unix.Openat2(b.proj, c, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: uint64(beneath)}); err == nil {
					unix.Close(fd)
					next = append(next, c)
				}
				continue
			}
			entries, err := b.list(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if ok, _ := doublestar.Match(seg, e.Name()); ok && e.Type().IsDir() {
					next = append(next, join(dir, e.Name()))
				}
			}
		}
		cur = next
		if len(cur) > maxRules {
			cur = cur[:maxRules]
		}
	}
	return cur
}

// open adds a rule for a root beneath the project.
func (b *builder) open(pat, rel string, dir bool, access uint64) {
	if len(b.plan.rules) >= maxRules {
		b.skip("%s: %s: more than %d roots; the rest grant nothing", pat, rel, maxRules)
		return
	}
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if dir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat2(b.proj, rel, &unix.OpenHow{Flags: flags, Resolve: uint64(beneath)})
	if err != nil {
		if dir || !errors.Is(err, unix.ENOENT) {
			b.skip("%s: %s: %v", pat, rel, openErr(err))
		} else {
			b.skip("%s: %s does not exist; a command may write it once it does", pat, rel)
		}
		return
	}
	if !dir {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
			unix.Close(fd)
			b.skip("%s: %s is not a regular file with a single link", pat, rel)
			return
		}
	}
	b.plan.rules = append(b.plan.rules, pathRule{name: rel, fd: fd, dir: dir, access: access})
	name := rel
	if dir {
		name = strings.TrimSuffix(rel, "/") + "/"
		if rel == "." {
			name = "./"
		}
	}
	b.plan.Write = append(b.plan.Write, name)
}

// openErr says what a failed beneath-open means.
func openErr(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return errors.New("a symlink on the way (symlinks never extend a grant)")
	case errors.Is(err, unix.EXDEV):
		return errors.New("it leaves the project dir")
	case errors.Is(err, unix.ENOTDIR):
		return errors.New("not a directory")
	case errors.Is(err, unix.ENOENT):
		return errors.New("does not exist")
	}
	return err
}

// absolute adds a rule for a path outside the project (the temp dir, a
// device, a system directory), opened as named.
func (b *builder) absolute(p, name string, access uint64) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return err
	}
	b.plan.rules = append(b.plan.rules, pathRule{name: p, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, access: access})
	if name != "" && access&readRights == access {
		b.plan.Read = append(b.plan.Read, name)
	}
	return nil
}

// reportFile grants access to the regular file p alone: never through a
// symlink at its leaf, never a directory (which would grant a tree).
func (b *builder) reportFile(p string, access uint64) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("not an absolute path")
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("not a regular file")
		}
		return err
	}
	b.plan.rules = append(b.plan.rules, pathRule{name: p, fd: fd, access: access})
	return nil
}

// readPattern grants reading what one readAllowList pattern can express:
// relative patterns beneath the project (no symlinks), absolute ones as
// named.
func (b *builder) readPattern(pat string) {
	if strings.HasPrefix(pat, "/") {
		prefix, _, ok := splitPattern(pat)
		if !ok || hasMeta(prefix) {
			b.skip("readAllowList %s: an absolute pattern must be a path or path/**", pat)
			return
		}
		if err := b.absolute(prefix, prefix, readRights); err != nil {
			b.skip("readAllowList %s: %v", pat, err)
		}
		return
	}
	prefix, tree, ok := splitPattern(pat)
	if !ok {
		b.skip("readAllowList %s: Landlock grants whole directories or single files and this pattern is neither", pat)
		return
	}
	dirs := []string{prefix}
	if tree && hasMeta(prefix) {
		dirs = b.expand(prefix)
	}
	for _, rel := range dirs {
		n := len(b.plan.Write)
		b.open("readAllowList "+pat, rel, tree, readRights)
		if len(b.plan.Write) > n {
			// open lists roots as writes; this one is a read.
			b.plan.Read = append(b.plan.Read, b.plan.Write[n])
			b.plan.Write = b.plan.Write[:n]
		}
	}
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
