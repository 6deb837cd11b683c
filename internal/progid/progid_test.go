package progid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/bashguard"
)

// fixture is a machine in miniature: a system directory nobody writes
// with a few programs, and an agent's writable root.
type fixture struct {
	sys, root string
	f         *Finder
}

func newFixture(t *testing.T, anyWritable bool) fixture {
	t.Helper()
	base := t.TempDir()
	fx := fixture{sys: filepath.Join(base, "sys"), root: filepath.Join(base, "proj", "units")}
	for _, d := range []string{fx.sys, fx.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Distinct contents: each file is the program it is named after.
	for _, n := range []string{"curl", "git", "python3", "perl", "node", "busybox"} {
		write(t, filepath.Join(fx.sys, n), "#!/bin/sh\n# the real "+n+"\n")
	}
	fx.f = New(Config{Path: fx.sys, Dir: fx.root, Writable: []string{fx.root}, AnyWritable: anyWritable})
	return fx
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, false)
	sys, root := fx.sys, fx.root
	copyOf := func(name, as string) {
		b, err := os.ReadFile(filepath.Join(sys, name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(sys, as), string(b))
	}
	copyOf("curl", "fetch")
	copyOf("python3", "python3.11")
	if err := os.Link(filepath.Join(sys, "perl"), filepath.Join(sys, "perl5.36.0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("node", filepath.Join(sys, "nodejs")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sys, "mytool"), "#!/bin/sh\n# a program no rule names\n")
	// busybox answers to each name it is linked as.
	for _, n := range []string{"wget", "sh"} {
		if err := os.Link(filepath.Join(sys, "busybox"), filepath.Join(sys, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(sys, "busybox"), filepath.Join(sys, "bb")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "x.sh"), "#!/bin/sh\ncurl x\n")
	if err := os.Symlink(filepath.Join(sys, "curl"), filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	// A link outside the roots that leads into one.
	if err := os.Symlink(filepath.Join(root, "x.sh"), filepath.Join(sys, "innocent")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		word, path, dir string
		dirKnown        bool
		name, unsure    string
	}{
		{word: "curl", name: "curl"},
		{word: filepath.Join(sys, "curl"), name: "curl"},
		{word: "fetch", name: "curl"},
		{word: "python3.11", name: "python3"},
		{word: "perl5.36.0", name: "perl"},
		{word: "nodejs", name: "node"},
		{word: "mytool", name: "mytool"},
		{word: "wget", name: "wget"},
		{word: "sh", name: "sh"},
		{word: "bb", unsure: "acts by the name it is run as"},
		{word: "./x.sh", dirKnown: true, unsure: "may be any program"},
		{word: "./c", dirKnown: true, unsure: "may be any program"},
		{word: filepath.Join(root, "c"), unsure: "may be any program"},
		{word: "./later.sh", dirKnown: true, unsure: "may be any program"},
		{word: "./x.sh", dirKnown: false, unsure: "only known when the command runs"},
		{word: "innocent", unsure: "may be any program"},
		{word: "curl", path: root + ":" + sys, unsure: "a program put there would run"},
		{word: "curl", path: "…:" + sys, unsure: "only known when the command runs"},
		{word: "curl", path: ".:" + sys, dirKnown: true, unsure: "a program put there would run"},
		{word: "nosuch", name: "nosuch"},
		{word: "/proc/self/fd/3", unsure: "a process's file"},
	} {
		path := tc.path
		if path == "" {
			path = sys
		}
		p := fx.f.Find(tc.word, path, tc.dir, tc.dirKnown)
		switch {
		case tc.unsure != "":
			if !strings.Contains(p.Unsure, tc.unsure) {
				t.Errorf("Find(%q, %q) = %+v, want unsure (%s)", tc.word, path, p, tc.unsure)
			}
		case p.Unsure != "" || p.Name != tc.name:
			t.Errorf("Find(%q, %q) = %+v, want %s", tc.word, path, p, tc.name)
		}
	}
	if p := fx.f.Find("curl", sys, "", true); p.File != filepath.Join(sys, "curl") {
		t.Errorf("curl found as %q", p.File)
	}
}

// A .. comes after the links before it, as the kernel reads a path: a
// path that goes into a writable root and climbs out again is the agent's
// to point anywhere, whether the directory it climbs out of is a link, a
// real directory (which the agent may replace by a link) or not there
// yet.
func TestDotDotIsPhysical(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, false)
	sys, root := fx.sys, fx.root
	deep := filepath.Join(root, "a", "b", "c", "d", "e", "f", "g", "h")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deep, filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	ups := strings.Repeat("/..", strings.Count(root, "/")+8)
	for _, tc := range []struct{ name, word, path string }{
		{"through a link", "." + "/l" + ups + sys + "/git", sys},
		{"through a directory", "./real" + ups + sys + "/git", sys},
		{"through a link not there yet", "./later" + ups + sys + "/git", sys},
		{"an absolute path", root + "/l" + ups + sys + "/git", sys},
		{"a PATH directory through a link", "git", root + "/l" + ups + sys},
		{"a relative PATH directory", "git", "l" + ups + sys},
	} {
		if p := fx.f.Find(tc.word, tc.path, "", true); p.Unsure == "" {
			t.Errorf("%s: Find(%q, %q) = %+v, want unsure", tc.name, tc.word, tc.path, p)
		}
	}
	// Outside the roots .. is what it says.
	if p := fx.f.Find(sys+"/../"+filepath.Base(sys)+"/git", sys, "", true); p.Unsure != "" || p.Name != "git" {
		t.Errorf("a .. outside the roots: %+v", p)
	}
}

// Where commands may run unconfined, whatever this user can write is the
// agent's too.
func TestAnyWritable(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, true)
	if os.Geteuid() == 0 {
		// root can write everything: nothing is known.
		if p := fx.f.Find("curl", fx.sys, "", true); p.Unsure == "" {
			t.Errorf("as root with unconfined commands, curl is %+v", p)
		}
		return
	}
	if err := os.Chmod(fx.sys, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(fx.sys, 0o755) })
	if err := os.Chmod(filepath.Join(fx.sys, "curl"), 0o555); err != nil {
		t.Fatal(err)
	}
	if p := fx.f.Find("curl", fx.sys, "", true); p.Unsure != "" || p.Name != "curl" {
		t.Errorf("a file this user cannot write: %+v", p)
	}
	if p := fx.f.Find("git", fx.sys, "", true); p.Unsure == "" {
		t.Errorf("a file this user can write: %+v", p)
	}
}

// The guard models a program by what it is: a copy of curl under another
// name gets curl's rules.
func TestGuardKnowsACopy(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, false)
	b, _ := os.ReadFile(filepath.Join(fx.sys, "curl"))
	write(t, filepath.Join(fx.sys, "fetch"), string(b))
	err := bashguard.CheckWith(`fetch -d '{"a":1}' http://h/p`, bashguard.Options{Programs: fx.f})
	if err == nil || !strings.Contains(err.Error(), "handed to curl") {
		t.Fatalf("a copy of curl handed inline JSON: %v", err)
	}
	if err := bashguard.CheckWith(`./x.sh '{"a":1}'`, bashguard.Options{Programs: fx.f}); err == nil {
		t.Fatalf("a script the agent may have written, handed JSON, passed the guard")
	}
}
