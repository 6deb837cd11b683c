package confine

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/journal"
	"github.com/toolhost/toolhost/internal/procs"
)

// tree makes the given project-relative files ("dir/" for a directory).
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mkdirIn(dir string) func(string) error {
	return func(rel string) error { return os.MkdirAll(filepath.Join(dir, rel), 0o755) }
}

func prepared(t *testing.T, dir string, sb agents.Sandbox) *Plan {
	t.Helper()
	if sb.Commands == "" {
		sb.Commands = agents.CommandsRequire
	}
	p, err := Prepare(Request{Agent: "devloop-test", Sandbox: sb, ProjectDir: dir, Mkdir: mkdirIn(dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if !p.Confined() {
		t.Skipf("Landlock is not available: %s", p.Unconfined)
	}
	return p
}

// TestWriteRoots: each pattern shape grants exactly what it can express and
// never more; every refusal says why.
func TestWriteRoots(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		files   []string
		allow   []string
		write   []string
		skipped []string // substrings, one per expected skip
		created []string // directories Prepare had to create
	}{
		{name: "dir/** is the dir, created when missing", allow: []string{"prd/**"}, write: []string{"prd/"}, created: []string{"prd"}},
		{name: "a glob segment expands to the existing dirs", files: []string{"units/a/tests/", "units/b/tests/", "units/c/src/", "units/d"},
			allow: []string{"units/*/tests/**"}, write: []string{"units/a/tests/", "units/b/tests/"}},
		{name: "a glob with nothing to match yet", allow: []string{"units/*/tests/**"}, skipped: []string{"no directory matches units/*/tests yet"}},
		{name: "an exact file that exists", files: []string{"notes.txt"}, allow: []string{"notes.txt"}, write: []string{"notes.txt"}},
		{name: "an exact file that does not", allow: []string{"notes.txt"}, skipped: []string{"notes.txt does not exist"}},
		{name: "a file pattern is not expressible", allow: []string{"agent-state/pm-*.json"}, skipped: []string{"agent-state/pm-*.json: Landlock grants whole directories or single files"}},
		{name: "** in the middle is not expressible", allow: []string{"docs/**/*.md"}, skipped: []string{"docs/**/*.md: Landlock grants"}},
		{name: "a store is never granted", allow: []string{".toolhost/**", "bugs/**", "timeline.ndjson"},
			skipped: []string{".toolhost is toolhost's own store", "bugs is toolhost's own store", "timeline.ndjson is toolhost's own store"}},
		{name: "a root holding stores is carved around them", files: []string{"prd/", "units/a/", "README.md", "bugs/BUG-0001.json", "timeline.ndjson", ".toolhost/audit.ndjson", ".toolhost/units.json", "integration/logs/"},
			allow: []string{"**"}, write: []string{"README.md", "integration/", "prd/", "units/"},
			skipped: []string{"nothing new can be created directly in the project dir"}},
		{name: "integration/** is wholly the integrator's", files: []string{"integration/logs/", "integration/cases/c.json"},
			allow: []string{"integration/**"}, write: []string{"integration/"}},
		{name: "leaving the project grants nothing", allow: []string{"../**"}, skipped: []string{"../**: ..: it leaves the project dir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := tree(t, tc.files...)
			p := prepared(t, dir, agents.Sandbox{WriteAllowList: tc.allow})
			got := slices.DeleteFunc(slices.Clone(p.Write), func(s string) bool { return s == "$TMPDIR" })
			slices.Sort(got)
			want := slices.Clone(tc.write)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("write = %q, want %q", got, want)
			}
			if len(p.Skipped) != len(tc.skipped) {
				t.Errorf("skipped = %q, want %d entries like %q", p.Skipped, len(tc.skipped), tc.skipped)
			}
			for _, s := range tc.skipped {
				if !slices.ContainsFunc(p.Skipped, func(x string) bool { return strings.Contains(x, s) }) {
					t.Errorf("skipped = %q, want one containing %q", p.Skipped, s)
				}
			}
			for _, d := range tc.created {
				if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
					t.Errorf("%s was not created: %v", d, err)
				}
			}
		})
	}
}

// TestSymlinksAndLinksNeverExtendAGrant: a root reached through a symlink,
// a symlink as the root, and a hard-linked file grant nothing.
func TestSymlinksAndLinksNeverExtendAGrant(t *testing.T) {
	t.Parallel()
	dir := tree(t, "units/a/", "real/tests/")
	outside := t.TempDir()
	for link, target := range map[string]string{
		"units/b":    filepath.Join(dir, "real"), // a/*/tests via a symlinked unit dir
		"units/out":  outside,
		"memory":     outside,                     // the prefix of a dir/** root
		"single.txt": filepath.Join(outside, "f"), // an exact file that is a symlink
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hard.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "hard.txt"), filepath.Join(outside, "hard-elsewhere")); err != nil {
		t.Fatal(err)
	}
	p := prepared(t, dir, agents.Sandbox{WriteAllowList: []string{"units/*/tests/**", "memory/devloop/x/**", "single.txt", "hard.txt"}})
	if got := slices.DeleteFunc(slices.Clone(p.Write), func(s string) bool { return s == "$TMPDIR" }); len(got) != 0 {
		t.Fatalf("write = %q, want nothing granted through links", got)
	}
	for _, want := range []string{"a symlink on the way", "single.txt", "hard.txt is not a regular file with a single link"} {
		if !slices.ContainsFunc(p.Skipped, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("skipped = %q, want one naming %q", p.Skipped, want)
		}
	}
}

// TestStoresMatchTheOwners: Stores names the stores journal and the
// integrator write (the integrator's paths are checked in its own tests).
func TestStoresMatchTheOwners(t *testing.T) {
	t.Parallel()
	for _, p := range journal.ServiceAllowList {
		base, _, _ := strings.Cut(p, "/**")
		base = strings.ReplaceAll(base, "*", "000001") // a rotated file of a log
		if s, _ := store(base); !s {
			t.Errorf("journal store %s is not in Stores", base)
		}
	}
}

// TestNetworkRules: any port leaves TCP unhandled; a list handles it; a
// unit binds its own port only.
func TestNetworkRules(t *testing.T) {
	t.Parallel()
	var n agents.Network
	if err := json.Unmarshal([]byte(`{"connect":[443,80],"bind":"any","unitBind":"own"}`), &n); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sb := agents.Sandbox{Commands: agents.CommandsRequire, Network: n}
	p, err := Prepare(Request{Agent: "a", Sandbox: sb, ProjectDir: dir, Unit: "u", Port: 4123})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Confined() {
		t.Skip(p.Unconfined)
	}
	if p.Connect != "443,80" || p.Bind != "4123" || len(p.ports) != 3 {
		t.Fatalf("connect %q bind %q ports %v; want connect 443,80, bind only the unit's 4123", p.Connect, p.Bind, p.ports)
	}
	cmd, err := Prepare(Request{Agent: "a", Sandbox: sb, ProjectDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Close()
	if cmd.Bind != "any" {
		t.Fatalf("a command's bind = %q, want the agent's any", cmd.Bind)
	}
}

// TestKernelWithout: the ABIEnv seam stands for a kernel without Landlock
// or an older one; require refuses with what to change, best-effort runs
// and says what it could not enforce.
func TestKernelWithout(t *testing.T) {
	if Detect().KernelABI < abiNet {
		t.Skip("needs a kernel with Landlock ABI 4 to simulate older ones")
	}
	var n agents.Network
	_ = json.Unmarshal([]byte(`{"connect":[443]}`), &n)
	cases := []struct {
		abi, mode string
		refuse    string
		remark    string
	}{
		{"0", agents.CommandsRequire, "TOOLHOST_LANDLOCK_ABI=0 disables Landlock", ""},
		{"0", agents.CommandsBestEffort, "", ""},
		{"3", agents.CommandsRequire, "TCP rules (connect 443, bind any) need Landlock ABI 4", ""},
		{"3", agents.CommandsBestEffort, "", "TCP rules (connect 443, bind any) need Landlock ABI 4"},
		// Signal scoping is needed by every plan: require refuses below 6.
		{"5", agents.CommandsRequire, "scoping signals and abstract unix sockets to the command, so it could signal toolhost or any process of this user needs Landlock ABI 6", ""},
		{"5", agents.CommandsBestEffort, "", "scoping signals and abstract unix sockets to the command"},
	}
	for _, tc := range cases {
		t.Run(tc.abi+"/"+tc.mode, func(t *testing.T) {
			t.Setenv(ABIEnv, tc.abi)
			p, err := Prepare(Request{Agent: "devloop-x", Sandbox: agents.Sandbox{Commands: tc.mode, Network: n}, ProjectDir: t.TempDir()})
			var ue *UnavailableError
			switch {
			case tc.refuse != "":
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), `"best-effort"`) {
					t.Fatalf("err = %v, want a refusal naming %q and the other modes", err, tc.refuse)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			defer p.Close()
			if tc.abi == "0" {
				if p.Confined() || !strings.Contains(p.String(), "unconfined: TOOLHOST_LANDLOCK_ABI=0") {
					t.Fatalf("plan %s, want unconfined with the reason", p)
				}
				return
			}
			if !p.Confined() || !strings.Contains(strings.Join(p.NotEnforced, "; "), tc.remark) {
				t.Fatalf("plan %s, want confined noting %q", p, tc.remark)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for pat, want := range map[string]string{
		"prd/**":                "`prd/`",
		"units/*/tests/**":      "each existing `units/*/tests/`",
		"notes.txt":             "`notes.txt` (if it exists)",
		"agent-state/pm-*.json": "nothing (only toolhost's tools write it)",
		".toolhost/**":          "nothing (toolhost's own store)",
		"integration/**":        "`integration/`",
	} {
		if got := Describe(pat); got != want {
			t.Errorf("Describe(%q) = %q, want %q", pat, got, want)
		}
	}
}

func TestTempDirs(t *testing.T) {
	t.Parallel()
	stale, err := NewTempDir(1<<30, 1)
	if err != nil {
		t.Fatal(err)
	}
	self, err := NewTempDir(os.Getpid(), ownTicks(t))
	if err != nil {
		t.Fatal(err)
	}
	detached, err := NewTempDir(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	staleReport, err := NewReportFile(1<<30, 1)
	if err != nil {
		t.Fatal(err)
	}
	ownReport, err := NewReportFile(os.Getpid(), ownTicks(t))
	if err != nil {
		t.Fatal(err)
	}
	defer RemoveTempDir(self)
	defer RemoveTempDir(detached)
	defer os.Remove(ownReport)
	RemoveStaleTempDirs()
	if _, err := os.Stat(stale); err == nil {
		t.Error("the temp dir of a gone process was kept")
	}
	if _, err := os.Stat(staleReport); err == nil {
		t.Error("the report file of a gone process was kept")
	}
	for _, d := range []string{self, detached, ownReport} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	// A path that a record names but NewTempDir did not make is never removed.
	other := t.TempDir()
	RemoveTempDir(other)
	if _, err := os.Stat(other); err != nil {
		t.Errorf("RemoveTempDir removed %s, which is not a private temp dir", other)
	}
}

func ownTicks(t *testing.T) uint64 {
	t.Helper()
	st, err := procs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return st.StartTicks
}

// TestReadAllowList: with sandbox.readAllowList a confined command reads
// only those patterns (and runs programs from the system directories); a
// read elsewhere in the project is refused.
func TestReadAllowList(t *testing.T) {
	t.Parallel()
	dir := tree(t, "units/a/f", "prd/p")
	p := prepared(t, dir, agents.Sandbox{ReadAllowList: []string{"units/**"}})
	if !slices.Contains(p.Read, "units/") {
		t.Fatalf("read = %q, want units/", p.Read)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, err := procs.Spawn(procs.Spec{Name: "sh", Argv: []string{"/bin/sh", "-c", "cat units/a/f && echo; cat prd/p 2>&1 || echo refused"},
		Dir: dir, Stdout: w, Confine: p.Restrict})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	<-c.Done()
	if got := string(out); !strings.HasPrefix(got, "x\n") || !strings.Contains(got, "Permission denied") || !strings.HasSuffix(got, "refused\n") {
		t.Fatalf("output %q, want units/a/f read and prd/p refused", got)
	}
}

// runConfined runs a shell script under the plan in dir and returns what it
// printed (stdout and stderr together).
func runConfined(t *testing.T, p *Plan, dir, script string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Command("sh", []string{"/bin/sh", "-c", script}, dir)
	spec.Stdout, spec.Stderr = w, w
	c, err := procs.Spawn(spec)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	<-c.Done()
	return string(out)
}

// TestHiddenDirectory: a hidden directory (toolhost's secrets) cannot be
// read, listed or written beneath by a confined command, even through a
// symlink planted beside it or inside its write roots, while its siblings
// and everything else stay readable; a write root holding it loses it too.
func TestHiddenDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	secrets := filepath.Join(base, "state", "toolhost", "secrets")
	for _, f := range []string{filepath.Join(secrets, "token"), filepath.Join(base, "state", "toolhost", "other"), filepath.Join(base, "sibling")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("content-"+filepath.Base(f)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir := tree(t, "units/a/f")
	if err := os.Symlink(secrets, filepath.Join(dir, "units/a/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secrets, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for _, sb := range []agents.Sandbox{
		{WriteAllowList: []string{"units/**"}},
		{WriteAllowList: []string{"units/**"}, ReadAllowList: []string{"units/**", base + "/**"}},
	} {
		sb.Commands = agents.CommandsRequire
		p, err := Prepare(Request{Agent: "devloop-test", Sandbox: sb, ProjectDir: dir, Mkdir: mkdirIn(dir), Hide: []string{secrets}})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Confined() {
			t.Skipf("Landlock is not available: %s", p.Unconfined)
		}
		got := runConfined(t, p, dir, `
			for f in `+secrets+`/token units/a/link/token `+base+`/link/token; do cat "$f" 2>/dev/null || echo "no-read $f"; done
			ls `+secrets+` >/dev/null 2>&1 || echo no-list
			echo x > `+secrets+`/planted 2>/dev/null || echo no-write
			cat `+base+`/sibling `+base+`/state/toolhost/other units/a/f /etc/hostname >/dev/null && echo siblings-read
			echo y > units/a/w && cat units/a/w`)
		p.Close()
		for _, want := range []string{"no-read " + secrets + "/token", "no-read units/a/link/token", "no-read " + base + "/link/token", "no-list", "no-write", "siblings-read", "y\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("readAllowList %v: output %q lacks %q", sb.ReadAllowList, got, want)
			}
		}
		if strings.Contains(got, "content-token") {
			t.Errorf("readAllowList %v: the secret was read: %q", sb.ReadAllowList, got)
		}
		if _, err := os.Stat(filepath.Join(secrets, "planted")); err == nil {
			t.Errorf("readAllowList %v: a file was planted in the hidden dir", sb.ReadAllowList)
		}
	}
}

func fakeAddr(port int) net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }

func closeFD(fd int) { _ = syscall.Close(fd) }

// TestEnvironment: a process gets its kind's variables, the sandbox's names
// and patterns (a pattern never passes a credential-looking name, an exact
// name does), the caller's values and its temp dir; nothing else of
// toolhost's environment.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "TERM=xterm", "ANTHROPIC_API_KEY=sk-1", "AWS_SECRET_ACCESS_KEY=s2",
		"GITHUB_TOKEN=t3", "NODE_ENV=test", "NODE_AUTH_TOKEN=t4", "npm_config__authToken=t5", "GIT_AUTHOR_NAME=a", "DB_PASSWORD=p6",
		"SESSION_ID=s7", "OTHER=o", "TZ=UTC"}
	cases := []struct {
		name string
		kind Kind
		env  []string
		set  []string
		want string
	}{
		{"command defaults", KindCommand, nil, nil, "HOME LC_ALL PATH TERM TZ"},
		{"unit defaults and its own", KindUnit, nil, []string{"PORT=3000", "HOME=/u"}, "HOME PATH PORT TZ"},
		{"upstream defaults", KindUpstream, nil, []string{"GITHUB_TOOLSETS=issues"}, "GITHUB_TOOLSETS HOME PATH"},
		{"patterns pass no credential", KindCommand, []string{"NODE_*", "npm_*", "GIT_*", "DB_*", "*SESSION*"}, nil,
			"GIT_AUTHOR_NAME HOME LC_ALL NODE_ENV PATH TERM TZ"},
		{"an exact name passes a credential", KindCommand, []string{"GITHUB_TOKEN", "NODE_AUTH_TOKEN"}, nil,
			"GITHUB_TOKEN HOME LC_ALL NODE_AUTH_TOKEN PATH TERM TZ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := buildEnv(environ, tc.kind, tc.env, tc.set, "")
			if got := strings.Join(envNames(env), " "); got != tc.want {
				t.Fatalf("names %q, want %q (env %q)", got, tc.want, env)
			}
			for _, kv := range tc.set {
				if !slices.Contains(env, kv) {
					t.Errorf("%s missing from %q", kv, env)
				}
			}
		})
	}
	env := buildEnv(environ, KindCommand, nil, nil, "/tmp/x")
	for _, kv := range []string{"TMPDIR=/tmp/x", "TMP=/tmp/x", "TEMP=/tmp/x"} {
		if !slices.Contains(env, kv) {
			t.Errorf("%s missing from %q", kv, env)
		}
	}
}
