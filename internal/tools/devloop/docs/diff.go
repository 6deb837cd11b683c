package docs

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// DiffInput picks two versions of a document.
type DiffInput struct {
	Path string `json:"path" jsonschema:"minLength=1,maxLength=512" jsonschema_description:"project-relative path of the document, e.g. prd/goals.html"`
	From int    `json:"from,omitempty" jsonschema:"minimum=1" jsonschema_description:"archived version to compare from; default: the newest archived version that differs from what is compared to (so right after write_chapter, which archives what it writes, the version before it; after a hand edit, what write_chapter wrote)"`
	To   int    `json:"to,omitempty" jsonschema:"minimum=1" jsonschema_description:"archived version to compare to; default: the current file"`
}

// side is one resolved version: its label and parsed document.
type side struct {
	label string
	doc   *html.Node
}

// PagedDiffInput is a DiffInput for a tool whose result can be too large
// to return at once.
type PagedDiffInput struct {
	DiffInput
	tool.Page
}

// resolve loads the two versions a DiffInput names.
func resolve(c *callctx.Ctx, in DiffInput) (from, to side, err error) {
	rel, err := docPath(in.Path)
	if err != nil {
		return side{}, side{}, err
	}
	vs, err := readVersions(c.Files, rel)
	if err != nil {
		return side{}, side{}, err
	}
	load := func(n int) (side, error) {
		if n == 0 {
			b, err := c.Files.ReadFile(rel)
			if notFound(err) {
				return side{}, tool.Fail(nil, "%s does not exist; give the path of an existing document", rel)
			}
			if err != nil {
				return side{}, err
			}
			doc, err := parseDocument(b)
			return side{label: rel + "@current", doc: doc}, err
		}
		if vs.find(n) == nil {
			return side{}, tool.Fail(nil, "%s has no archived version %d (archived: %s); pick one of those, or omit from/to", rel, n, versionList(vs))
		}
		b, err := c.Files.ReadFile(versionPath(rel, n))
		if err != nil {
			return side{}, err
		}
		doc, err := parseDocument(b)
		return side{label: rel + "@v" + strconv.Itoa(n), doc: doc}, err
	}
	fromN := in.From
	if fromN == 0 {
		// The newest version before to; for the current file, the newest
		// one whose content differs from it, falling back to the newest.
		var cur string
		if in.To == 0 {
			if b, err := c.Files.ReadFile(rel); err == nil {
				cur = sha256Hex(b)
			}
		}
		for _, v := range vs.Versions {
			if in.To != 0 && v.Version < in.To || in.To == 0 && v.SHA256 != cur {
				fromN = v.Version
			}
		}
		if fromN == 0 && in.To == 0 {
			if l := vs.latest(); l != nil {
				fromN = l.Version
			}
		}
		if fromN == 0 {
			if in.To == 0 {
				return side{}, side{}, tool.Fail(nil, "%s has no archived version to compare with; archive_doc it (write_chapter does this) or pass from", rel)
			}
			return side{}, side{}, tool.Fail(nil, "%s has no archived version before %d; pass from", rel, in.To)
		}
	}
	if from, err = load(fromN); err != nil {
		return side{}, side{}, err
	}
	to, err = load(in.To)
	return from, to, err
}

func versionList(vs *Versions) string {
	if len(vs.Versions) == 0 {
		return "none"
	}
	s := make([]string, len(vs.Versions))
	for i, v := range vs.Versions {
		s[i] = strconv.Itoa(v.Version)
	}
	return strings.Join(s, ", ")
}

// textOf is the visible text a reader compares: the article when the page
// has one, else the whole body.
func textOf(doc *html.Node) []string {
	if a := articleOf(doc); a != nil {
		return visibleLines(a)
	}
	return visibleLines(doc)
}

// DiffHTMLOutput is the result of diff_html.
type DiffHTMLOutput struct {
	tool.Status
	From      string          `json:"from,omitempty" jsonschema_description:"the version compared from"`
	To        string          `json:"to,omitempty" jsonschema_description:"the version compared to"`
	Diff      string          `json:"diff,omitempty" page:"1" jsonschema_description:"unified diff of the visible text, one line per block"`
	Added     int             `json:"added" jsonschema_description:"lines added"`
	Removed   int             `json:"removed" jsonschema_description:"lines removed"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// DiffHTML is the diff_html tool.
func DiffHTML() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "diff_html",
		Title: "Diff document text",
		Description: "Unified diff of the visible text (one line per paragraph, heading, list item...) of two versions of a document; markup-only changes do not show. " +
			"Default: the newest archived version against the current file. Returns the diff and the added/removed line counts.",
		Effect: tool.ReadOnly,
	}, diffHTML)
}

func diffHTML(_ context.Context, c *callctx.Ctx, in PagedDiffInput) (DiffHTMLOutput, error) {
	from, to, err := resolve(c, in.DiffInput)
	if err != nil {
		return DiffHTMLOutput{}, err
	}
	a, b := textOf(from.doc), textOf(to.doc)
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b), FromFile: from.label, ToFile: to.label, Context: 2,
	})
	if err != nil {
		return DiffHTMLOutput{}, err
	}
	out := DiffHTMLOutput{Status: tool.Status{OK: true}, From: from.label, To: to.label, Diff: d}
	out.Added, out.Removed = countChanges(a, b)
	return out, nil
}

// lines gives difflib newline-terminated lines, as it expects.
func lines(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l + "\n"
	}
	return out
}

// countChanges counts inserted and deleted lines from difflib's opcodes.
func countChanges(a, b []string) (added, removed int) {
	m := difflib.NewMatcher(a, b)
	for _, op := range m.GetOpCodes() {
		switch op.Tag {
		case 'i':
			added += op.J2 - op.J1
		case 'd':
			removed += op.I2 - op.I1
		case 'r':
			added += op.J2 - op.J1
			removed += op.I2 - op.I1
		}
	}
	return added, removed
}

// UnitChange is one unit's fate between two versions.
type UnitChange struct {
	Unit    string `json:"unit" jsonschema_description:"the unit id (data-unit)"`
	Status  string `json:"status" jsonschema:"enum=added,enum=removed,enum=changed,enum=unchanged" jsonschema_description:"added, removed, changed or unchanged"`
	Heading string `json:"heading,omitempty" jsonschema_description:"the unit's heading (in the newer version when it exists there)"`
	Added   int    `json:"added,omitempty" jsonschema_description:"text lines added inside the unit"`
	Removed int    `json:"removed,omitempty" jsonschema_description:"text lines removed inside the unit"`
}

// UnitCounts sums the statuses.
type UnitCounts struct {
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
}

// DiffUnitsOutput is the result of diff_units.
type DiffUnitsOutput struct {
	tool.Status
	From      string          `json:"from,omitempty" jsonschema_description:"the version compared from"`
	To        string          `json:"to,omitempty" jsonschema_description:"the version compared to"`
	Units     []UnitChange    `json:"units,omitempty" page:"1" jsonschema_description:"every unit of both versions: the newer version's order, removed units after"`
	Counts    UnitCounts      `json:"counts" jsonschema_description:"how many units have each status"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// DiffUnits is the diff_units tool.
func DiffUnits() tool.Tool {
	return tool.New(tool.Spec{
		Name:        "diff_units",
		Title:       "Diff document units",
		Description: "Classify every unit (top-level <section data-unit>) of two versions of a document as added, removed, changed (visible text differs) or unchanged. Default: the newest archived version against the current file.",
		Effect:      tool.ReadOnly,
	}, diffUnits)
}

func diffUnits(_ context.Context, c *callctx.Ctx, in PagedDiffInput) (DiffUnitsOutput, error) {
	from, to, err := resolve(c, in.DiffInput)
	if err != nil {
		return DiffUnitsOutput{}, err
	}
	out := DiffUnitsOutput{Status: tool.Status{OK: true}, From: from.label, To: to.label}
	out.Units, out.Counts = compareUnits(from.doc, to.doc)
	return out, nil
}

// compareUnits lines the units of two documents up by id.
func compareUnits(a, b *html.Node) ([]UnitChange, UnitCounts) {
	ua, _ := readUnits(a)
	ub, _ := readUnits(b)
	old := map[string]pageUnit{}
	for _, u := range ua {
		old[u.ID] = u
	}
	var out []UnitChange
	var n UnitCounts
	seen := map[string]bool{}
	for _, u := range ub {
		seen[u.ID] = true
		o, ok := old[u.ID]
		ch := UnitChange{Unit: u.ID, Heading: u.Heading}
		switch {
		case !ok:
			ch.Status, ch.Added = "added", len(strings.Split(u.Text, "\n"))
			n.Added++
		case o.Text == u.Text:
			ch.Status = "unchanged"
			n.Unchanged++
		default:
			ch.Status = "changed"
			ch.Added, ch.Removed = countChanges(strings.Split(o.Text, "\n"), strings.Split(u.Text, "\n"))
			n.Changed++
		}
		out = append(out, ch)
	}
	for _, u := range ua {
		if !seen[u.ID] {
			out = append(out, UnitChange{Unit: u.ID, Status: "removed", Heading: u.Heading, Removed: len(strings.Split(u.Text, "\n"))})
			n.Removed++
		}
	}
	return out, n
}

// EchoDiffOutput is the result of echo_diff.
type EchoDiffOutput struct {
	tool.Status
	Markdown string     `json:"markdown,omitempty" jsonschema_description:"the summary a person reads"`
	Counts   UnitCounts `json:"counts" jsonschema_description:"how many units have each status"`
	Seq      int64      `json:"seq,omitempty" jsonschema_description:"timeline sequence number of the doc.diff entry"`
}

// EchoDiff is the echo_diff tool.
func EchoDiff() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "echo_diff",
		Title: "Summarise document change",
		Description: "Write a short markdown summary of which units of a document were added, changed or removed (default: newest archived version against the current file) " +
			"and append it to the timeline as kind doc.diff, so a person sees what changed in ten seconds.",
		Effect: tool.Additive,
	}, echoDiff)
}

// maxListed bounds the unit lines of a summary so it stays short.
const maxListed = 12

func echoDiff(ctx context.Context, c *callctx.Ctx, in DiffInput) (EchoDiffOutput, error) {
	from, to, err := resolve(c, in)
	if err != nil {
		return EchoDiffOutput{}, err
	}
	units, n := compareUnits(from.doc, to.doc)
	md := summary(from.label, to.label, units, n)
	var changed []UnitChange
	for _, u := range units {
		if u.Status != "unchanged" {
			changed = append(changed, u)
		}
	}
	seq, err := c.AppendTimeline(ctx, "doc.diff", md, map[string]any{
		"path": strings.SplitN(from.label, "@", 2)[0], "from": from.label, "to": to.label, "counts": n, "units": changed,
	})
	if err != nil {
		return EchoDiffOutput{}, err
	}
	return EchoDiffOutput{Status: tool.Status{OK: true}, Markdown: md, Counts: n, Seq: seq}, nil
}

// summary renders the markdown: one headline with the counts, then one
// line per unit that is not unchanged.
func summary(from, to string, units []UnitChange, n UnitCounts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s → %s**: %d added, %d changed, %d removed, %d unchanged\n", from, strings.TrimPrefix(to, strings.SplitN(to, "@", 2)[0]), n.Added, n.Changed, n.Removed, n.Unchanged)
	listed := 0
	for _, u := range units {
		if u.Status == "unchanged" {
			continue
		}
		if listed == maxListed {
			fmt.Fprintf(&b, "- … and %d more\n", n.Added+n.Changed+n.Removed-listed)
			break
		}
		listed++
		h := ""
		if u.Heading != "" {
			h = " — " + u.Heading
		}
		switch u.Status {
		case "changed":
			fmt.Fprintf(&b, "- changed `%s`%s (+%d/−%d lines)\n", u.Unit, h, u.Added, u.Removed)
		default:
			fmt.Fprintf(&b, "- %s `%s`%s\n", u.Status, u.Unit, h)
		}
	}
	if listed == 0 {
		b.WriteString("- no unit changed\n")
	}
	return b.String()
}
