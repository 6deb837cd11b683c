package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/callctx"
)

type listIn struct {
	N     int `json:"n"`
	Long  int `json:"long,omitempty"`
	Lines int `json:"lines,omitempty"`
	Page
}

type listItem struct {
	ID      int      `json:"id"`
	Message string   `json:"message"`
	Tags    []string `json:"tags,omitempty"`
}

type listOut struct {
	Status
	Total int        `json:"total"`
	Text  string     `json:"text" page:"2"`
	Items []listItem `json:"items" page:"1"`
	// Truncated is set when the result was cut.
	Truncated *Truncated `json:"truncated,omitempty"`
}

// lister returns n items (item Long with a message of that many bytes and
// as many tags) and a text of Lines lines.
func lister() Tool {
	return New(Spec{Name: "lister"}, func(_ context.Context, _ *callctx.Ctx, in listIn) (listOut, error) {
		out := listOut{Status: Status{OK: true}, Total: in.N, Items: []listItem{}}
		for i := range in.N {
			it := listItem{ID: i, Message: fmt.Sprintf("failure %d: expected 1 to be 2 in some/file/path_%d.test.ts", i, i%7)}
			if in.Long > 0 && i == 3 {
				it.Message = strings.Repeat("é", in.Long/2)
				for j := range in.Long / 10 {
					it.Tags = append(it.Tags, fmt.Sprintf("tag-%d", j))
				}
			}
			out.Items = append(out.Items, it)
		}
		var text strings.Builder
		for i := range in.Lines {
			fmt.Fprintf(&text, "+ line %d of the diff\n", i)
		}
		out.Text = text.String()
		return out, nil
	})
}

// memFiles is the file door of a test: writes land in a map.
type memFiles struct {
	callctx.Files
	mu    sync.Mutex
	files map[string][]byte
	fail  error
}

func (m *memFiles) WriteFile(rel string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.files[rel] = append([]byte(nil), data...)
	return nil
}

func callList(t *testing.T, c *callctx.Ctx, in listIn) (listOut, Result) {
	t.Helper()
	args, _ := json.Marshal(in)
	r, err := lister().Call(context.Background(), c, args)
	if err != nil {
		t.Fatal(err)
	}
	var out listOut
	if err := json.Unmarshal(r.Structured, &out); err != nil {
		t.Fatalf("%s: %v", r.Structured, err)
	}
	return out, r
}

func testCtx() (*callctx.Ctx, *memFiles) {
	files := &memFiles{files: map[string][]byte{}}
	return &callctx.Ctx{Identity: callctx.Identity{Agent: "tester"}, Services: callctx.Services{Files: files}}, files
}

// TestBoundedResultPages: a result over the budget comes back within it,
// totals whole; walking next_page returns every entry once, in order; the
// whole result is in the file truncated names; a page past the last is an
// ok:false with the number of pages.
func TestBoundedResultPages(t *testing.T) {
	t.Parallel()
	c, files := testCtx()
	in := listIn{N: 5000, Lines: 3000}
	first, r := callList(t, c, in)
	if len(r.Structured) > ResultBudget {
		t.Fatalf("page 1 is %d bytes, over the budget %d", len(r.Structured), ResultBudget)
	}
	tr := first.Truncated
	if tr == nil || tr.Page != 1 || tr.Pages < 2 || tr.NextPage != 2 || tr.Entries != 8000 || first.Total != 5000 {
		t.Fatalf("page 1: total %d, truncated %+v", first.Total, tr)
	}
	whole, ok := files.files[tr.FullResult]
	if tr.FullResult != "agent-state/tester-lister-result.json" || !ok {
		t.Fatalf("full_result %q not written (files %v)", tr.FullResult, len(files.files))
	}
	var all listOut
	if err := json.Unmarshal(whole, &all); err != nil || len(all.Items) != 5000 || all.Truncated != nil {
		t.Fatalf("the file does not hold the whole result: %d items, %v", len(all.Items), err)
	}
	var items []listItem
	var text strings.Builder
	shown := 0
	for p := 1; p != 0; {
		in.Page = Page{Page: p}
		out, r := callList(t, c, in)
		if len(r.Structured) > ResultBudget {
			t.Fatalf("page %d is %d bytes", p, len(r.Structured))
		}
		if out.Total != 5000 || out.Truncated == nil || out.Truncated.Page != p {
			t.Fatalf("page %d: %+v", p, out.Truncated)
		}
		items = append(items, out.Items...)
		text.WriteString(out.Text)
		shown += out.Truncated.Shown
		p = out.Truncated.NextPage
	}
	if len(items) != 5000 || shown != 8000 || text.String() != all.Text {
		t.Fatalf("walking the pages gave %d items, %d entries, text equal %v", len(items), shown, text.String() == all.Text)
	}
	for i, it := range items {
		if it.ID != i {
			t.Fatalf("item %d is %d: pages lose or repeat entries", i, it.ID)
		}
	}
	// The most useful field (page:"1") comes first: the items before the
	// text's lines.
	if len(first.Items) == 0 || first.Text != "" {
		t.Errorf("page 1 holds %d items and text %q, want items first", len(first.Items), first.Text)
	}
	in.Page = Page{Page: tr.Pages + 1}
	out, r := callList(t, c, in)
	if !r.Failed || !strings.Contains(out.Reason, fmt.Sprintf("the result has %d", tr.Pages)) {
		t.Errorf("a page past the last: %s", r.Structured)
	}
}

// TestBoundedResultSmall: a result within the budget is returned as the
// tool made it, without truncated and without a file.
func TestBoundedResultSmall(t *testing.T) {
	t.Parallel()
	c, files := testCtx()
	out, r := callList(t, c, listIn{N: 10, Lines: 2})
	if out.Truncated != nil || len(out.Items) != 10 || len(files.files) != 0 {
		t.Fatalf("small result changed: %s (files %d)", r.Structured, len(files.files))
	}
	out, r = callList(t, c, listIn{N: 10, Page: Page{Page: 2}})
	if !r.Failed || !strings.Contains(out.Reason, "fits on page 1") {
		t.Errorf("page 2 of a small result: %s", r.Structured)
	}
}

// TestBoundedResultLongEntry: one entry larger than the budget on its own
// is shortened to fit, and says so; the file keeps it whole. When the file
// cannot be written, the note says so and paging still works.
func TestBoundedResultLongEntry(t *testing.T) {
	t.Parallel()
	c, files := testCtx()
	out, r := callList(t, c, listIn{N: 8, Long: 200000})
	if len(r.Structured) > ResultBudget {
		t.Fatalf("page 1 is %d bytes", len(r.Structured))
	}
	found := false
	for p := 1; p != 0; {
		out, r = callList(t, c, listIn{N: 8, Long: 200000, Page: Page{Page: p}})
		if len(r.Structured) > ResultBudget {
			t.Fatalf("page %d is %d bytes", p, len(r.Structured))
		}
		for _, it := range out.Items {
			if it.ID == 3 {
				found = strings.Contains(it.Message, "[cut: the whole text is in full_result]") && strings.Contains(out.Truncated.Note, "shortened")
			}
		}
		p = out.Truncated.NextPage
	}
	if !found {
		t.Error("the long entry was not shortened with a mark")
	}
	var all listOut
	_ = json.Unmarshal(files.files[out.Truncated.FullResult], &all)
	if len(all.Items) != 8 || len(all.Items[3].Message) != 200000 {
		t.Errorf("the file does not keep the long entry whole")
	}
	files.fail = fmt.Errorf("sandbox violation")
	out, _ = callList(t, c, listIn{N: 5000})
	if out.Truncated == nil || out.Truncated.FullResult != "" || !strings.Contains(out.Truncated.Note, "could not be written") || out.Truncated.NextPage != 2 {
		t.Errorf("without a file: %+v", out.Truncated)
	}
}

// TestBoundsOfRefusesBadDeclarations: a paged output without a Truncated
// field, or whose input has no page, is a programming error caught when
// the tool is built.
func TestBoundsOfRefusesBadDeclarations(t *testing.T) {
	t.Parallel()
	type noTrunc struct {
		Items []int `json:"items" page:"1"`
	}
	type noPage struct{ N int }
	for name, build := range map[string]func(){
		"no truncated": func() { boundsOf[listIn, noTrunc]("x") },
		"no page":      func() { boundsOf[noPage, listOut]("x") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			build()
		}()
	}
}
