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

	handledFS, handledNet, scoped uint64
	// mptcpArch, when set, is the audit arch of the seccomp filter that
	// keeps MPTCP sockets from passing the TCP rules.
	mptcpArch uint32
	rules     []pathRule
	ports     []portRule
	ruleFD    int
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
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s's commands must run confined by the kernel (sandbox.commands is %q), but %s; "+
		"run toolhost on Linux 5.13 or later with Landlock enabled (`toolhost sandbox probe` shows what this machine offers), "+
		"or set sandbox.commands of %s to %q (run with what the kernel can enforce, said in every result and audit row) or %q in the agents file",
		e.Agent, agents.CommandsRequire, e.Reason, e.Agent, agents.CommandsBestEffort, agents.CommandsOff)
}

// RejectionKind makes the refusal a fault.Rejection.
func (e *UnavailableError) RejectionKind() fault.Kind { return fault.Sandbox }

// Prepare builds the plan of one command. The plan holds an open ruleset:
// Close it when the command has started.
func Prepare(req Request) (*Plan, error) {
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
	p := &Plan{Agent: req.Agent, Mode: req.Sandbox.Commands, ruleFD: -1, Connect: "any", Bind: "any", Write: []string{}}
	if p.Mode == "" {
		p.Mode = agents.CommandsRequire
	}
	if p.Mode == agents.CommandsOff {
		p.Unconfined = "sandbox.commands is off for " + req.Agent
		return p, nil
	}
	k := Detect()
	if k.ABI < 1 {
		return p.cannot(k.Reason)
	}
	p.ABI = k.ABI
	if err := p.network(req, k); err != nil {
		return nil, err
	}
	if p.ABI >= abiScoped {
		p.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		p.Scoped = true
	} else {
		p.NotEnforced = append(p.NotEnforced, fmt.Sprintf("signals and abstract unix sockets are not scoped (Landlock ABI %d; scoping needs %d)", p.ABI, abiScoped))
	}
	p.TempDir = tmp
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

// cannot is a plan the kernel cannot enforce at all.
func (p *Plan) cannot(reason string) (*Plan, error) {
	if p.Mode == agents.CommandsRequire {
		return nil, &UnavailableError{Agent: p.Agent, Reason: reason}
	}
	p.ABI, p.Unconfined = 0, reason
	return p, nil
}

// Close releases the ruleset. Safe to call twice.
func (p *Plan) Close() {
	p.closeRules()
	if p.ruleFD >= 0 {
		unix.Close(p.ruleFD)
		p.ruleFD = -1
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
// for a command or unitBind for a unit.
func (p *Plan) network(req Request, k Kernel) error {
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
	if n.Connect.Any && bind.Any {
		return nil
	}
	p.Connect, p.Bind = portWords(n.Connect), portWords(bind)
	arch := nativeArch()
	if p.ABI < abiNet || arch == 0 {
		what := fmt.Sprintf("TCP rules (connect %s, bind %s) need Landlock ABI %d; %s", p.Connect, p.Bind, abiNet, abiWords(k))
		if arch == 0 {
			what = fmt.Sprintf("TCP rules (connect %s, bind %s) cannot be held on %s (MPTCP sockets pass them and no seccomp filter is written for it)", p.Connect, p.Bind, runtime.GOARCH)
		}
		if p.Mode == agents.CommandsRequire {
			return &UnavailableError{Agent: p.Agent, Reason: "its " + what}
		}
		p.NotEnforced = append(p.NotEnforced, what)
		p.Connect, p.Bind = "any", "any"
		return nil
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
	add(n.Connect, unix.LANDLOCK_ACCESS_NET_CONNECT_TCP)
	add(bind, unix.LANDLOCK_ACCESS_NET_BIND_TCP)
	p.mptcpArch = arch
	return nil
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
	p.handledFS = fsRights(p.ABI) &^ readRights
	s := req.Sandbox
	restrictRead := s.ReadAllowList != nil
	extra := uint64(0)
	if restrictRead {
		p.handledFS |= readRights
		extra = readRights
		p.Read = []string{}
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
	if restrictRead {
		for _, d := range systemReadDirs() {
			_ = b.absolute(d, "", readRights)
		}
		for _, pat := range s.ReadAllowList {
			b.readPattern(pat)
		}
	}
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
}

// beneath is how a root inside the project is opened: never through a
// symlink, never out of the project.
var beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func (b *builder) skip(format string, args ...any) {
	b.plan.Skipped = append(b.plan.Skipped, fmt.Sprintf(format, args...))
}

// writePattern grants what one writeAllowList pattern can express.
func (b *builder) writePattern(pat string, dirAccess, fileAccess uint64, mkdir func(string) error) {
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

// Env returns env with the command's private temp dir set under every
// name programs look for it.
func (p *Plan) Env(env []string) []string {
	tempDir := p.TempDir
	if tempDir == "" {
		return env
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == TempDirVar || k == "TMP" || k == "TEMP"
	})
	return append(out, TempDirVar+"="+tempDir, "TMP="+tempDir, "TEMP="+tempDir)
}

// Report is how a command was confined, as a tool's result shows it.
type Report struct {
	Confined    bool     `json:"confined" jsonschema_description:"true when the kernel (Landlock) confined the command"`
	ABI         int      `json:"abi,omitempty" jsonschema_description:"the Landlock ABI of the confinement"`
	Unconfined  string   `json:"unconfined,omitempty" jsonschema_description:"why the command ran without confinement (sandbox.commands is best-effort or off)"`
	Write       []string `json:"write,omitempty" jsonschema_description:"where the command could write: project-relative directories (ending in /) and files, and $TMPDIR (its private temp dir, removed afterwards); everything else was refused by the kernel"`
	Read        []string `json:"read,omitempty" jsonschema_description:"where the command could read when the agent limits reads (readAllowList); empty: everywhere"`
	Skipped     []string `json:"skipped,omitempty" jsonschema_description:"allow-list patterns that commands cannot write, and why (toolhost's tools write them)"`
	Connect     string   `json:"connect,omitempty" jsonschema_description:"TCP ports the command could connect to: any, none or a list"`
	Bind        string   `json:"bind,omitempty" jsonschema_description:"TCP ports the command could listen on: any, none or a list"`
	Scoped      bool     `json:"scoped,omitempty" jsonschema_description:"true when the command could not signal, or reach through abstract unix sockets, any process outside itself"`
	NotEnforced []string `json:"not_enforced,omitempty" jsonschema_description:"what this machine's kernel could not enforce"`
}

// Report is the plan as a result shows it.
func (p *Plan) Report() Report {
	if !p.Confined() {
		return Report{Unconfined: p.Unconfined}
	}
	return Report{Confined: true, ABI: p.ABI, Write: p.Write, Read: p.Read, Skipped: p.Skipped,
		Connect: p.Connect, Bind: p.Bind, Scoped: p.Scoped, NotEnforced: p.NotEnforced}
}

// String is the report in one line, for the audit row.
func (r Report) String() string {
	if !r.Confined {
		return "unconfined: " + r.Unconfined
	}
	var b strings.Builder
	fmt.Fprintf(&b, "landlock abi %d; write %s", r.ABI, strings.Join(r.Write, " "))
	if len(r.Write) == 0 {
		b.WriteString("nothing")
	}
	if len(r.Read) > 0 {
		fmt.Fprintf(&b, "; read %s", strings.Join(r.Read, " "))
	}
	fmt.Fprintf(&b, "; connect %s; bind %s", r.Connect, r.Bind)
	if r.Scoped {
		b.WriteString("; signals scoped")
	}
	for _, s := range r.NotEnforced {
		b.WriteString("; not enforced: " + s)
	}
	return b.String()
}
