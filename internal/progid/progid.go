package progid

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/bashguard"
)

// Config is what a Finder knows of where commands run.
type Config struct {
	// Path is the PATH commands start with ("" takes this process's).
	Path string
	// Dir is the directory commands start in (absolute).
	Dir string
	// Writable are directories an agent may write beneath (absolute):
	// every agent's write roots. A file there, or reached through a link
	// there, may be anything by the time it runs.
	Writable []string
	// TempPrefix, when set, makes every directory directly in the system
	// temp dir whose name starts with it writable too (the commands'
	// private $TMPDIRs, toolhost-cmd-…).
	TempPrefix string
	// AnyWritable is set when some agent's commands may run unconfined:
	// then every file this process's user could write counts as written
	// by an agent.
	AnyWritable bool
}

// Finder says which program a command word runs (bashguard.Programs).
// It is safe for concurrent use.
type Finder struct {
	cfg     Config
	path    string
	tempDir string

	mu     sync.Mutex
	known  *table
	built  time.Time
	hashes map[version]string
	// found are recent answers: what a word finds changes only when a
	// file outside the agents' reach changes, which an administrator does
	// (a file an agent can write is unknown, and stays so).
	found map[query]answer
}

type query struct {
	word, path, dir string
	dirKnown        bool
}

type answer struct {
	p  bashguard.Program
	at time.Time
}

// maxFound bounds the answers kept.
const maxFound = 4096

// tableTTL is how long the identities of the known programs are kept
// before they are looked up again (a package upgrade replaces a file).
const tableTTL = 30 * time.Second

// maxLinks bounds the symbolic links one lookup follows (as the kernel's
// ELOOP does).
const maxLinks = 40

// systemDirs are searched for the known programs besides PATH.
var systemDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// New returns a Finder for commands that run as cfg says.
func New(cfg Config) *Finder {
	p := cfg.Path
	if p == "" {
		p = os.Getenv("PATH")
	}
	for i, w := range cfg.Writable {
		cfg.Writable[i] = filepath.Clean(w)
	}
	return &Finder{cfg: cfg, path: p, tempDir: filepath.Clean(os.TempDir()), hashes: map[version]string{}, found: map[query]answer{}}
}

// Path implements bashguard.Programs.
func (f *Finder) Path() string { return f.path }

// Find implements bashguard.Programs: the file bash runs for word, found
// on path from dir, and what program it is.
func (f *Finder) Find(word, path, dir string, dirKnown bool) bashguard.Program {
	q := query{word, path, dir, dirKnown}
	f.mu.Lock()
	a, ok := f.found[q]
	f.mu.Unlock()
	if ok && time.Since(a.at) < tableTTL {
		return a.p
	}
	p := f.find(word, path, dir, dirKnown)
	f.mu.Lock()
	if len(f.found) >= maxFound {
		clear(f.found)
	}
	f.found[q] = answer{p, time.Now()}
	f.mu.Unlock()
	return p
}

func (f *Finder) find(word, path, dir string, dirKnown bool) bashguard.Program {
	name := bashguard.Canonical(baseName(word))
	if strings.Contains(word, "/") {
		p := word
		if !filepath.IsAbs(p) {
			base, ok := f.dirOf(dir, dirKnown)
			if !ok {
				return bashguard.Program{Name: name, Unsure: "the program " + word + " is a path relative to a working directory that is only known when the command runs"}
			}
			p = join(base, p)
		}
		return f.identify(p, word)
	}
	for _, d := range strings.Split(path, ":") {
		if strings.Contains(d, "…") {
			return bashguard.Program{Name: name, Unsure: "PATH holds a directory only known when the command runs, searched for " + word + " before any the analysis knows"}
		}
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			base, ok := f.dirOf(dir, dirKnown)
			if !ok {
				return bashguard.Program{Name: name, Unsure: "PATH holds the relative directory " + d + ", and the working directory is only known when the command runs"}
			}
			d = join(base, d)
		}
		if why := f.dirWritable(d); why != "" {
			return bashguard.Program{Name: name, Unsure: "PATH searches " + d + " for " + word + ", a directory " + why + ": a program put there would run"}
		}
		cand := join(d, word)
		fi, err := os.Stat(cand)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		return f.identify(cand, word)
	}
	// bash answers "command not found".
	return bashguard.Program{Name: name}
}

// dirOf is the absolute working directory dir names.
func (f *Finder) dirOf(dir string, known bool) (string, bool) {
	if !known || strings.Contains(dir, "…") || f.cfg.Dir == "" && !filepath.IsAbs(dir) {
		return "", false
	}
	if filepath.IsAbs(dir) {
		return dir, true
	}
	return filepath.Join(f.cfg.Dir, dir), true
}

// identify names the program the file p is: every link on the way to the
// file and the file itself must lie where no agent writes, and the file is
// the known program it is the same file as, or has the same content as;
// else it is named after word.
func (f *Finder) identify(p, word string) bashguard.Program {
	name := bashguard.Canonical(baseName(word))
	real, visited, err := resolve(p)
	if err != nil {
		// No such file now; one the command makes before it runs the
		// word would run, if it can be made there.
		for _, v := range visited {
			if why := f.writable(v); why != "" {
				return bashguard.Program{Name: name, Unsure: "the program " + word + " would be " + p + ", a path " + why + ", so it may be any program by the time it runs"}
			}
		}
		return bashguard.Program{Name: name}
	}
	for _, v := range visited {
		if why := f.writable(v); why != "" {
			return bashguard.Program{Name: name, File: p, Unsure: "the program " + word + " is " + v + ", a path " + why + ", so it may be any program by the time it runs"}
		}
	}
	for _, v := range append([]string{filepath.Clean(p)}, visited...) {
		if strings.HasPrefix(v, "/proc/") || strings.HasPrefix(v, "/dev/") {
			return bashguard.Program{Name: name, File: p, Unsure: "the program " + word + " goes through " + v + ", which names a process's file or a device, not a program on disk"}
		}
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return bashguard.Program{Name: name, File: p}
	}
	names := f.namesOf(real, fi, name)
	switch {
	case len(names) == 0:
		return bashguard.Program{Name: name, File: p}
	case slices.Contains(names, name):
		return bashguard.Program{Name: name, File: p}
	case len(names) == 1:
		return bashguard.Program{Name: names[0], File: p}
	}
	return bashguard.Program{Name: name, File: p, Unsure: "the program " + word + " is the same file as " + strings.Join(names, ", ") +
		", which acts by the name it is run as, and " + baseName(word) + " is none of them"}
}

// writable says why a path lies where an agent may write ("" when it
// does not).
func (f *Finder) writable(p string) string {
	p = filepath.Clean(p)
	for _, w := range f.cfg.Writable {
		if p == w || strings.HasPrefix(p, w+"/") || w == "/" {
			return "inside " + w + ", which an agent may write"
		}
	}
	if f.cfg.TempPrefix != "" {
		if rest, ok := strings.CutPrefix(p, f.tempDir+"/"); ok && strings.HasPrefix(rest, f.cfg.TempPrefix) {
			return "inside a command's private temp dir"
		}
	}
	if f.cfg.AnyWritable {
		for q := p; ; q = filepath.Dir(q) {
			if unix.Access(q, unix.W_OK) == nil {
				return "that this user can write, and commands may run unconfined"
			}
			if q == "/" || q == "." {
				break
			}
		}
	}
	return ""
}

// dirWritable says why an agent may put a file into directory d, or
// create d ("" when it cannot): d, or the directory a missing part of it
// would be made in, or a directory or link on the way, lies where an
// agent writes.
func (f *Finder) dirWritable(d string) string {
	_, visited, _ := resolve(d)
	for _, v := range visited {
		if why := f.writable(v); why != "" {
			return why
		}
	}
	return ""
}

// resolve follows the symbolic links of p to the file it names, as the
// kernel does: a .. goes up from where the path has got to, after the
// links before it are followed (so a/../b is not b when a is a link).
// visited are the paths it went through: each link, each directory it
// passed (a directory an agent may write could be replaced by a link
// before the command runs), and the file. When a part is missing, err is
// set and visited ends with the directory it is missing from.
func resolve(p string) (string, []string, error) {
	var visited []string
	links := 0
	todo := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", append(visited, cur), err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			if len(todo) > 0 {
				visited = append(visited, cur)
			}
			continue
		}
		visited = append(visited, next)
		if links++; links > maxLinks {
			return "", append(visited, cur), errors.New("too many links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", append(visited, cur), err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), todo...)
	}
	return cur, append(visited, cur), nil
}

// join is dir/p as the kernel reads it: no .. is taken away first.
func join(dir, p string) string {
	return strings.TrimSuffix(dir, "/") + "/" + p
}

func baseName(w string) string {
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		return w[i+1:]
	}
	return w
}

// fileID names a file by its device and inode.
type fileID struct{ dev, ino uint64 }

// version names one content of a file: its identity, size and times.
type version struct {
	id           fileID
	size         int64
	mtime, ctime int64
}

func versionOf(id fileID, fi fs.FileInfo) version {
	v := version{id: id, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		v.ctime = changeTime(st)
	}
	return v
}

// known is one file a known program's name resolves to.
type known struct {
	id   fileID
	path string
	size int64
	name string
}

// table are the files the known programs resolve to.
type table struct {
	byID   map[fileID][]string
	bySize map[int64][]known
}

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true
}

// namesOf are the known programs the file real is: the same file, or one
// of the same content. name is the name it was run as, looked up first.
func (f *Finder) namesOf(real string, fi fs.FileInfo, name string) []string {
	id, ok := idOf(fi)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known == nil && f.isKnown(name, id) {
		// The name it was run as is a known program and this is its file:
		// no need to look every known program up (the hook answers one
		// call per process).
		return []string{name}
	}
	t := f.table()
	if names := t.byID[id]; len(names) > 0 {
		return names
	}
	var out []string
	for _, k := range t.bySize[fi.Size()] {
		if k.id == id || slices.Contains(out, k.name) {
			continue
		}
		a, b := f.hash(real, id, fi), f.hashKnown(k)
		if a != "" && a == b {
			out = append(out, k.name)
		}
	}
	return out
}

// knownDirs are where the known programs are looked up: PATH's absolute
// directories and the system ones, where no agent writes.
func (f *Finder) knownDirs() []string {
	var dirs []string
	for _, d := range append(strings.Split(f.path, ":"), systemDirs...) {
		if filepath.IsAbs(d) && !slices.Contains(dirs, d) && f.dirWritable(d) == "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// knownFile is the file a known program's name resolves to in dir, when
// no agent may have put it there.
func (f *Finder) knownFile(dir, name string) (fs.FileInfo, string, bool) {
	p := filepath.Join(dir, name)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, "", false
	}
	real := p
	if fi.Mode()&fs.ModeSymlink != 0 {
		r, visited, err := resolve(p)
		if err != nil || slices.ContainsFunc(visited, func(v string) bool { return f.writable(v) != "" }) {
			return nil, "", false
		}
		if fi, err = os.Stat(r); err != nil {
			return nil, "", false
		}
		real = r
	}
	if !fi.Mode().IsRegular() {
		return nil, "", false
	}
	return fi, real, true
}

// isKnown reports whether name is a known program and id one of the files
// it resolves to.
func (f *Finder) isKnown(name string, id fileID) bool {
	if !bashguard.IsKnownProgram(name) {
		return false
	}
	for _, d := range f.knownDirs() {
		if fi, _, ok := f.knownFile(d, name); ok {
			if kid, ok := idOf(fi); ok && kid == id {
				return true
			}
		}
	}
	return false
}

// table builds (or reuses) the identities of the known programs: each
// name looked up on PATH and in the system directories.
func (f *Finder) table() *table {
	if f.known != nil && time.Since(f.built) < tableTTL {
		return f.known
	}
	t := &table{byID: map[fileID][]string{}, bySize: map[int64][]known{}}
	dirs := f.knownDirs()
	for _, n := range bashguard.KnownPrograms() {
		for _, d := range dirs {
			fi, real, ok := f.knownFile(d, n)
			if !ok {
				continue
			}
			id, ok := idOf(fi)
			if !ok {
				continue
			}
			if !slices.Contains(t.byID[id], n) {
				t.byID[id] = append(t.byID[id], n)
				t.bySize[fi.Size()] = append(t.bySize[fi.Size()], known{id: id, path: real, size: fi.Size(), name: n})
			}
		}
	}
	f.known, f.built = t, time.Now()
	return t
}

// hash is the sha256 of a file's content, kept per file and version.
func (f *Finder) hash(p string, id fileID, fi fs.FileInfo) string {
	v := versionOf(id, fi)
	if h, ok := f.hashes[v]; ok {
		return h
	}
	file, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer file.Close()
	s := sha256.New()
	if _, err := io.Copy(s, file); err != nil {
		return ""
	}
	h := string(s.Sum(nil))
	f.hashes[v] = h
	return h
}

func (f *Finder) hashKnown(k known) string {
	fi, err := os.Stat(k.path)
	if err != nil {
		return ""
	}
	return f.hash(k.path, k.id, fi)
}
