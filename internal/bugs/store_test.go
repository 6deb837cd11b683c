package bugs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/sandbox"
)

func TestNormalizeTitleAndFingerprint(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"Login returns 500", "login returns 500"},
		{"  login: RETURNS   500!! ", "login returns 500"},
		{"POST /todos → 500 (again)", "post todos 500 again"},
		{"Ünïcode Tïtle", "ünïcode tïtle"},
		{"!!!", ""},
	}
	for _, tc := range cases {
		if got := NormalizeTitle(tc.in); got != tc.want {
			t.Errorf("NormalizeTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	base := Fingerprint("api", "todos creates", "Login returns 500")
	if Fingerprint("api", " todos creates ", "login: returns 500!") != base {
		t.Errorf("case, punctuation and surrounding spaces must not change the fingerprint")
	}
	for _, other := range []string{Fingerprint("web", "todos creates", "Login returns 500"), Fingerprint("api", "todos lists", "Login returns 500"),
		Fingerprint("api", "todos creates", "Login returns 404"), Fingerprint("api\x00todos", "creates", "Login returns 500")} {
		if other == base {
			t.Errorf("a different unit, test or title must change the fingerprint")
		}
	}
}

func TestIDs(t *testing.T) {
	t.Parallel()
	for n, id := range map[int]string{1: "BUG-0001", 42: "BUG-0042", 9999: "BUG-9999", 10000: "BUG-10000"} {
		if FormatID(n) != id || IDNumber(id) != n {
			t.Errorf("FormatID(%d)=%s IDNumber(%s)=%d", n, FormatID(n), id, IDNumber(id))
		}
	}
	if IDNumber("BUG-1") != 0 || IDNumber("bug-0001") != 0 {
		t.Errorf("malformed ids must give 0")
	}
}

func TestAllowedTargetsIsACopy(t *testing.T) {
	t.Parallel()
	a := AllowedTargets(StatusOpen)
	a[0] = "closed"
	if !slices.Equal(AllowedTargets(StatusOpen), []string{StatusTriaged, StatusWontfix}) {
		t.Errorf("callers must not be able to change the state machine")
	}
	if len(AllowedTargets(StatusWontfix)) != 0 || len(AllowedTargets("nonsense")) != 0 {
		t.Errorf("wontfix and unknown statuses have no way out")
	}
}

func TestListSortsByNumber(t *testing.T) {
	t.Parallel()
	dir, door := bugsDoor(t)
	for _, n := range []int{10000, 9999, 2} {
		if err := door.WriteJSON(Path(FormatID(n)), Bug{ID: FormatID(n), Status: StatusOpen}); err != nil {
			t.Fatal(err)
		}
	}
	// Files that are not bugs are ignored.
	if err := door.WriteFile("bugs/notes.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	all, err := scanAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range all {
		ids = append(ids, b.ID)
	}
	if !slices.Equal(ids, []string{"BUG-0002", "BUG-9999", "BUG-10000"}) {
		t.Errorf("List order %v", ids)
	}
	s := Store{Door: door}
	res, err := s.Open(NewBug{Title: "next", Severity: "minor", Evidence: Evidence{Repro: "r"}, By: "tester", At: time.Unix(0, 0).UTC()})
	if err != nil || res.Bug.ID != "BUG-10001" {
		t.Fatalf("next id after BUG-10000: %v %+v", err, res.Bug)
	}
	if _, err := Load(dir, "BUG-10001"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Transition("BUG-0404", StatusTriaged, "x", "", time.Now()); err == nil {
		t.Errorf("transition of a missing bug must fail")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "bugs", "BUG-0404*")); len(m) != 0 {
		t.Errorf("a failed transition created %v", m)
	}
}

// One unreadable bug file (hand-edited, half-copied) must not stop every
// agent from opening bugs: the store skips it for duplicate detection but
// still counts its id, so the next id never collides with it.
func TestOpenSkipsAnUnreadableBugButNotItsID(t *testing.T) {
	t.Parallel()
	dir, door := bugsDoor(t)
	if err := door.WriteJSON(Path("BUG-0001"), Bug{ID: "BUG-0001", Status: StatusOpen}); err != nil {
		t.Fatal(err)
	}
	if err := door.WriteFile(Path("BUG-0002"), []byte("{broken\n")); err != nil {
		t.Fatal(err)
	}
	ok, bad, err := Scan(dir)
	if err != nil || len(ok) != 1 || len(bad) != 1 || bad[0].ID != "BUG-0002" || bad[0].Reason == "" {
		t.Fatalf("Scan = %v, %+v, %v", ok, bad, err)
	}
	s := Store{Door: door}
	res, err := s.Open(NewBug{Title: "next", Severity: "minor", Evidence: Evidence{Repro: "r"}, By: "tester", At: time.Unix(0, 0).UTC()})
	if err != nil || res.Bug.ID != "BUG-0003" {
		t.Fatalf("open next to an unreadable BUG-0002: %v %+v", err, res.Bug)
	}
}

// Ids are never reused: deleting the newest bug file does not hand its id
// to the next bug (triage/ records and timeline entries still name it).
func TestOpenNeverReusesADeletedID(t *testing.T) {
	t.Parallel()
	dir, door := bugsDoor(t)
	s := Store{Door: door}
	open := func(title string) string {
		t.Helper()
		res, err := s.Open(NewBug{Title: title, Severity: "minor", Evidence: Evidence{Repro: "r"}, By: "tester", At: time.Unix(0, 0).UTC()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Bug.ID
	}
	open("first")
	second := open("second")
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(Path(second)))); err != nil {
		t.Fatal(err)
	}
	if id := open("third"); id != "BUG-0003" {
		t.Errorf("after deleting %s the next bug got %s, want BUG-0003", second, id)
	}
	all, err := scanAll(dir)
	if err != nil || len(all) != 2 {
		t.Errorf("List = %v, %v; the id counter must not show up as a bug", all, err)
	}
}

// TestReadsStayInsideTheProject: a bug file that is a symlink (to a file
// outside the project or inside it), or a bugs/ dir that leads outside, is
// never read.
func TestReadsStayInsideTheProject(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"id":"BUG-0001","title":"SECRET-FROM-OUTSIDE","severity":"minor","status":"open"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("symlinked bug file", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		if err := os.MkdirAll(filepath.Join(project, Dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(project, Path("BUG-0001"))); err != nil {
			t.Fatal(err)
		}
		if b, err := Load(project, "BUG-0001"); err == nil {
			t.Fatalf("read through a symlink: %+v", b)
		}
		all, bad, err := Scan(project)
		if err != nil || len(all) != 0 || len(bad) != 1 {
			t.Fatalf("Scan = %v, %v, %v; want the symlink listed as unreadable", all, bad, err)
		}
	})
	t.Run("bugs dir leads outside", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		if err := os.Symlink(outside, filepath.Join(project, Dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "BUG-0002.json"), []byte(`{"id":"BUG-0002","title":"SECRET-FROM-OUTSIDE","severity":"minor","status":"open"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := Load(project, "BUG-0002"); err == nil {
			t.Fatalf("read through a symlinked bugs/: %+v", b)
		}
		if all, _, err := Scan(project); err == nil || len(all) != 0 {
			t.Fatalf("Scan listed a bugs/ outside the project: %v %v", all, err)
		}
	})
}

// scanAll is Scan for tests that expect every bug file to be readable.
func scanAll(dir string) ([]*Bug, error) {
	all, bad, err := Scan(dir)
	if err == nil && len(bad) > 0 {
		err = errors.New(bad[0].Reason)
	}
	return all, err
}

// bugsDoor is a sandbox over a temp project dir that may write bugs/.
func bugsDoor(t testing.TB) (string, *sandbox.Sandbox) {
	t.Helper()
	dir := t.TempDir()
	door, err := sandbox.New(dir, "toolhost", []string{"bugs/**", ".toolhost/**"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = door.Close() })
	return dir, door
}
