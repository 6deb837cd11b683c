package bugs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// Dir is the bug store, relative to the project dir.
const Dir = "bugs"

// IDPattern is the shape of a bug id.
var IDPattern = regexp.MustCompile(`^BUG-\d{4,}$`)

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

// Load reads one bug from a project dir.
func Load(projectDir, id string) (*Bug, error) {
	if !IDPattern.MatchString(id) {
		return nil, fmt.Errorf("bug id %q must look like BUG-0001", id)
	}
	b, err := os.ReadFile(filepath.Join(projectDir, Dir, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no bug %s in %s/", id, Dir)
	}
	if err != nil {
		return nil, err
	}
	var bug Bug
	if err := json.Unmarshal(b, &bug); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", Path(id), err)
	}
	return &bug, nil
}

// List reads every bug of a project, sorted by id.
func List(projectDir string) ([]*Bug, error) {
	ents, err := os.ReadDir(filepath.Join(projectDir, Dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Bug
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || filepath.Ext(name) != ".json" || !IDPattern.MatchString(name[:len(name)-5]) {
			continue
		}
		bug, err := Load(projectDir, name[:len(name)-5])
		if err != nil {
			return nil, err
		}
		out = append(out, bug)
	}
	// By number, so BUG-10000 comes after BUG-9999.
	sort.Slice(out, func(i, j int) bool { return IDNumber(out[i].ID) < IDNumber(out[j].ID) })
	return out, nil
}
