package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/secrets"
)

// landlock builds the ruleset of a plan on a kernel with Landlock (ABI k.ABI
// ≥ 1): the TCP rules, what an older ABI leaves out (require refuses for
// any of it), the seccomp filter, then the roots.
func (p *Plan) landlock(req Request, k Kernel, tmp string) (*Plan, error) {
	p.ABI = k.ABI
	if p.ABI >= abiScoped {
		// Before the TCP rules: a held command's exclusion scopes too.
		p.scoped = scopeAll
		p.Scoped = true
	}
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

// scopeAll is what a plan scopes where the kernel can (ABI ≥ 6): signals
// and abstract unix sockets.
const scopeAll = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET

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
}

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
		var scoped uint64
		if req.Hold != HoldNone {
			scoped = p.scoped
		}
		fd, err := excludingRuleset(servers, scoped)
		if err != nil {
			p.NotEnforced = append(p.NotEnforced, "keeping toolhost's servers out of reach: "+err.Error())
			p.Connect = "any"
			return
		}
		p.exclFD, p.exclByHolder = fd, scoped != 0
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
