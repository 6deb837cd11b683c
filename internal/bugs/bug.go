package bugs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/internal/fault"
	"github.com/toolhost/toolhost/internal/util/lazyre"
)

// Dir is the bug store, relative to the project dir.
const Dir = "bugs"

// IDPattern is the shape of a bug id.
var IDPattern = lazyre.New(`^BUG-\d{4,}$`)

// Evidence is what a bug cites. Every citation names where it can be
// checked: a test in a Vitest report, an excerpt of a log at a line, a case
// run id.
type Evidence struct {
	Test     string    `json:"test,omitempty"`      // full test name as in the Vitest report
	TestFile string    `json:"test_file,omitempty"` // test file as in the report
	Report   string    `json:"report,omitempty"`    // project-relative path of a Vitest JSON report
	Log      string    `json:"log,omitempty"`       // quoted log excerpt
	LogFile  string    `json:"log_file,omitempty"`  // project-relative log path, e.g. integration/logs/api.err.log
	LogLine  int       `json:"log_line,omitempty"`  // 1-based line where the excerpt starts
	RunID    string    `json:"run_id,omitempty"`    // integration/runs/<run_id>.json
	Repro    string    `json:"repro,omitempty"`     // steps to reproduce
	AddedAt  time.Time `json:"added_at,omitempty"`
	AddedBy  string    `json:"added_by,omitempty"`
}

// Transition is one entry of a bug's history.
type Transition struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

// Bug is bugs/BUG-NNNN.json.
type Bug struct {
	ID          string       `json:"id"`
	Title       string       `json:"title"`
	UnitID      string       `json:"unit_id,omitempty"`
	Severity    string       `json:"severity"`
	Category    string       `json:"category,omitempty"`
	Status      string       `json:"status"`
	Fingerprint string       `json:"fingerprint"`
	Evidence    []Evidence   `json:"evidence"`
	History     []Transition `json:"history"`
	OpenedBy    string       `json:"opened_by"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
}

// Path returns the project-relative path of a bug.
func Path(id string) string { return Dir + "/" + id + ".json" }

// Load reads one bug from a project dir. Reads stay inside the project: a
// bug file that is a symlink, or that resolves outside the project, is
// refused like a missing one (bug files are written by the store only, as
// regular files).
func Load(projectDir, id string) (*Bug, error) {
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return load(root, id)
}

// errNoBug is load's error for a bug file that does not exist; it is
// ErrNotFound to errors.Is.
var errNoBug error = noBug{}

type noBug struct{}

func (noBug) Error() string        { return "no bug" }
func (noBug) Is(target error) bool { return target == ErrNotFound }

func load(root *os.Root, id string) (*Bug, error) {
	if !IDPattern().MatchString(id) {
		return nil, fmt.Errorf("bug id %q must look like BUG-0001", id)
	}
	f, err := root.OpenFile(Path(id), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %s in %s/", errNoBug, id, Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read (it must be a regular file inside the project): %w", Path(id), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", Path(id))
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var bug Bug
	if err := json.Unmarshal(b, &bug); err != nil {
		return nil, &fault.CorruptFile{Path: Path(id), Format: "JSON", Err: err}
	}
	return &bug, nil
}

// Unreadable is a bug file that Scan could not read or decode.
type Unreadable struct {
	ID     string
	Reason string
}

// Scan reads every bug of a project, sorted by id, and lists apart the bug
// files it could not read or decode (also by id), so one damaged file does
// not hide the others.
func Scan(projectDir string) ([]*Bug, []Unreadable, error) {
	root, err := os.OpenRoot(projectDir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	dir, err := root.Open(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s/ cannot be listed (it must be a directory inside the project): %w", Dir, err)
	}
	ents, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return nil, nil, err
	}
	var (
		out []*Bug
		bad []Unreadable
	)
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || filepath.Ext(name) != ".json" || !IDPattern().MatchString(name[:len(name)-5]) {
			continue
		}
		id := name[:len(name)-5]
		bug, err := load(root, id)
		if err != nil {
			bad = append(bad, Unreadable{ID: id, Reason: err.Error()})
			continue
		}
		out = append(out, bug)
	}
	// By number, so BUG-10000 comes after BUG-9999.
	sort.Slice(out, func(i, j int) bool { return IDNumber(out[i].ID) < IDNumber(out[j].ID) })
	sort.Slice(bad, func(i, j int) bool { return IDNumber(bad[i].ID) < IDNumber(bad[j].ID) })
	return out, bad, nil
}
