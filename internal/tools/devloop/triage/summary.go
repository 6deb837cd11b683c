package triage

import (
	"fmt"
	"time"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/sandbox"
)

// SummaryPath is the running triage summary.
const SummaryPath = bugs.TriageSummaryPath

// Summary is triage/triage.json: what the triager has learnt about each bug.
type Summary struct {
	UpdatedAt time.Time                `json:"updated_at"`
	Bugs      map[string]*SummaryEntry `json:"bugs"`
}

// SummaryEntry is one bug in the summary. Each tool fills in its part and
// leaves the others as they are.
type SummaryEntry struct {
	Title            string       `json:"title"`
	UnitID           string       `json:"unit_id,omitempty"`
	Category         string       `json:"category,omitempty"`
	Confidence       float64      `json:"confidence,omitempty"`
	Similar          []SimilarBug `json:"similar,omitempty"`
	Evidence         string       `json:"evidence,omitempty"`
	EvidenceVerified int          `json:"evidence_verified,omitempty"`
	EvidenceMissing  int          `json:"evidence_missing,omitempty"`
	UpdatedAt        time.Time    `json:"updated_at"`
	CallID           string       `json:"call_id"`
}

// updateSummary applies fn to the bug's entry under the summary's
// cross-process lock, so triager processes never lose each other's updates.
func updateSummary(c *callctx.Ctx, bug *bugs.Bug, fn func(e *SummaryEntry)) error {
	err := sandbox.UpdateJSON(c.Files, SummaryPath, func(s *Summary, _ bool) error {
		if s.Bugs == nil {
			s.Bugs = map[string]*SummaryEntry{}
		}
		e := s.Bugs[bug.ID]
		if e == nil {
			e = &SummaryEntry{}
			s.Bugs[bug.ID] = e
		}
		now := c.Clock.Now()
		e.Title, e.UnitID, e.UpdatedAt, e.CallID = bug.Title, bug.UnitID, now, c.CallID
		fn(e)
		s.UpdatedAt = now
		return nil
	})
	if err != nil {
		return fmt.Errorf("update %s: %w", SummaryPath, err)
	}
	return nil
}
