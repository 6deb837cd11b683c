package shellcorpus

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/testutil"
)

// Pass are the programs a stub records and then runs for real: wrappers,
// shells, filters and file tools a corpus command uses to build what it
// hides, and git and awk, whose own ways of running commands (aliases,
// pagers, system()) the corpus attacks.
var Pass = []string{"sh", "bash", "dash", "env", "timeout", "nice", "nohup", "xargs", "find", "cat", "head", "tail", "tr", "rev",
	"base64", "sed", "sort", "uniq", "basename", "dirname", "printf", "echo", "true", "false", "which", "tee", "cut", "grep", "dd",
	"awk", "mkdir", "touch", "cp", "ln", "chmod", "mv", "ls", "wc", "jq", "git", "readlink", "realpath", "test", "stdbuf", "fold",
	"mkfifo", "seq", "zip", "sqlite3", "strace"}

// needed are the programs of Pass that are not part of every system the
// tests run on (scripts/deps installs them).
var needed = []string{"zip", "sqlite3", "strace"}

// Record are the programs a stub only records (the ones that must not
// really run: curl, rm …, and the everyday tools the corpus only names).
var Record = []string{"curl", "wget", "nc", "rm", "npm", "npx", "node", "python3", "perl", "ruby", "make", "docker", "ssh", "gh",
	"go", "gofmt", "kubectl", "date", "pytest", "tsc", "vitest", "eslint", "fakeroot", "ncat"}

// builtinNames are bash builtins among the stubs: bash runs them itself,
// unless a program (env, xargs, find) runs them.
var builtinNames = []string{"echo", "printf", "true", "false", "test"}

// trailerMark starts a stub's trailer (stub/main.go reads it).
const trailerMark = "\n#shellcorpus-stub:"

var stubBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// stubBinary builds the stub once per version of its source, into a
// directory of the system temp dir named by that version (kept between
// test processes: every stub script names it).
func stubBinary(t testing.TB) string {
	t.Helper()
	stubBuild.once.Do(func() {
		src, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal", "testutil", "shellcorpus", "stub", "main.go"))
		if err != nil {
			stubBuild.err = err
			return
		}
		sum := sha256.Sum256(append(src, runtime.Version()...))
		dir := filepath.Join(os.TempDir(), "shellcorpus-stub-"+hex.EncodeToString(sum[:8]))
		stubBuild.path = filepath.Join(dir, "stub")
		if _, err := os.Stat(stubBuild.path); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			stubBuild.err = err
			return
		}
		tmp := stubBuild.path + fmt.Sprintf(".%d", os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "./internal/testutil/shellcorpus/stub")
		cmd.Dir = testutil.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if stubBuild.out, stubBuild.err = cmd.CombinedOutput(); stubBuild.err == nil {
			stubBuild.err = os.Rename(tmp, stubBuild.path)
		}
	})
	if stubBuild.err != nil {
		t.Fatalf("build the stub: %v\n%s", stubBuild.err, stubBuild.out)
	}
	return stubBuild.path
}

// Stubs is a directory of stub programs, one per name of Pass and
// Record, each a distinct file that records itself as the program it
// stands for.
type Stubs struct {
	Dir string
	// Log is where they record when $SHELLCORPUS_LOG is not set.
	Log string
	// RealPath is where the passed-through programs are found.
	RealPath string
	bin      string
}

// NewStubs writes the stubs into dir; log is their default log.
func NewStubs(t testing.TB, dir, log string) *Stubs {
	t.Helper()
	for _, name := range needed {
		testutil.NeedTool(t, name, "", "scripts/deps/61-shell-corpus.sh")
	}
	s := &Stubs{Dir: dir, Log: log, RealPath: realPath(), bin: stubBinary(t)}
	for _, name := range append(slices.Clone(Pass), Record...) {
		s.write(t, name, name)
	}
	// Another name of a program the stubs have: what the file is decides.
	s.write(t, "fetch", "curl")         // a copy of curl
	s.write(t, "python3.11", "python3") // a versioned interpreter
	if err := os.Link(filepath.Join(dir, "perl"), filepath.Join(dir, "perl5.36.0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("node", filepath.Join(dir, "nodejs")); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *Stubs) write(t testing.TB, file, name string) {
	t.Helper()
	tr, _ := json.Marshal(map[string]any{"name": name, "log": s.Log, "pass": slices.Contains(Pass, name), "real": s.RealPath})
	script := "#!" + s.bin + trailerMark + string(tr) + "\n"
	if err := os.WriteFile(filepath.Join(s.Dir, file), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// realPath is the PATH the real programs are found on: this process's,
// without any directory that holds stubs.
func realPath() string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d != "" && !strings.Contains(d, "shellcorpus") {
			keep = append(keep, d)
		}
	}
	return strings.Join(append(keep, "/usr/local/bin", "/usr/bin", "/bin"), ":")
}

// Invocation is one program bash ran: what the file is, and its
// arguments.
type Invocation struct {
	Name string
	Args []string
}

// ReadLog reads what the stubs recorded in path.
func ReadLog(t testing.TB, path string) []Invocation {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Invocation
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var argv []string
		if err := json.Unmarshal(sc.Bytes(), &argv); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, Invocation{Name: argv[0], Args: argv[1:]})
	}
	return out
}
