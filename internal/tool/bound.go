package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/callctx"
)

// A result the model reads must fit what its client passes on: Claude Code
// refuses an MCP result over MAX_MCP_OUTPUT_TOKENS (25,000 by default) and
// hands the model an error instead. A tool whose result grows with its
// input (a report's failures, a diff, a log) declares the lists and texts
// that grow, and the one mechanism here bounds every such result:
//
//   - the input embeds Page (the model asks for page 2, 3 …) and the output
//     a *Truncated field;
//   - each growing field carries the tag page:"N": a slice (paged by
//     entry) or a string (paged by line); pages take the fields in the
//     order of N (the most useful first), entry by entry;
//   - a result whose JSON fits ResultBudget on page 1 is returned as it is;
//     a larger one returns its scalars (the totals) whole, the entries of
//     the page asked for, and truncated: which page of how many, what it
//     shows, and the project-relative file holding the whole result
//     (written in the agent's own area, agent-state/<agent>-<tool>-result.json).
//
// A page is the same for the same input: asking again for page 2 of the
// same report returns the same entries. One entry larger than a page on its
// own is shortened (its longest strings and lists cut) and says so; the
// file keeps it whole.

// ResultBudget is the most JSON text a bounded result returns: about
// 10,000 tokens, well inside Claude Code's default limit of 25,000.
const ResultBudget = 40 << 10

// Page is embedded in the input of a tool whose result is bounded.
type Page struct {
	Page int `json:"page,omitempty" jsonschema:"minimum=1,maximum=1000000" jsonschema_description:"which page of a result too large to return at once (see truncated in the result); default 1"`
}

func (p Page) pageNumber() int { return max(p.Page, 1) }

type pager interface{ pageNumber() int }

// Truncated says a result was cut to its budget, and how to get the rest.
type Truncated struct {
	Page     int `json:"page" jsonschema_description:"the page returned"`
	Pages    int `json:"pages" jsonschema_description:"how many pages the whole result has"`
	NextPage int `json:"next_page,omitempty" jsonschema_description:"the page to ask for next (the same arguments with page set to it); absent on the last page"`
	// Entries counts the whole result's entries: list items and lines of
	// the long texts.
	Entries int `json:"entries" jsonschema_description:"entries of the whole result (list items, and lines of its long texts)"`
	Shown   int `json:"shown" jsonschema_description:"entries on this page"`
	// FullResult is the file holding the whole result ("" when it could not
	// be written: Note says why).
	FullResult string `json:"full_result,omitempty" jsonschema_description:"project-relative file holding the whole result as JSON: read or grep it instead of paging"`
	Note       string `json:"note" jsonschema_description:"what was cut and how to get the rest"`
}

// bounded is how New bounds the results of one tool: where the output's
// Truncated field is, and its paged fields in page order.
type bounded struct {
	truncated []int
	fields    []pagedField
}

type pagedField struct {
	index []int
	rank  int
	lines bool // a string paged by line; else a slice paged by entry
}

// boundsOf reads the page tags of Out; nil when Out has none. A tag on a
// field that is neither a slice nor a string, an Out without a *Truncated
// field or an In that does not embed Page is a programming error.
func boundsOf[In, Out any](name string) *bounded {
	out := reflect.TypeFor[Out]()
	if out.Kind() != reflect.Struct {
		return nil
	}
	b := &bounded{}
	for i := range out.NumField() {
		f := out.Field(i)
		if f.Type == reflect.TypeFor[*Truncated]() {
			b.truncated = f.Index
		}
		tag, ok := f.Tag.Lookup("page")
		if !ok {
			continue
		}
		rank, err := strconv.Atoi(tag)
		if err != nil {
			panic(fmt.Sprintf("tool %s: field %s: page tag %q is not a number", name, f.Name, tag))
		}
		pf := pagedField{index: f.Index, rank: rank}
		switch f.Type.Kind() {
		case reflect.Slice:
		case reflect.String:
			pf.lines = true
		default:
			panic(fmt.Sprintf("tool %s: field %s: only slices and strings are paged", name, f.Name))
		}
		b.fields = append(b.fields, pf)
	}
	if len(b.fields) == 0 {
		return nil
	}
	if b.truncated == nil {
		panic(fmt.Sprintf("tool %s: %v has paged fields but no *tool.Truncated field", name, out))
	}
	if _, ok := any(*new(In)).(pager); !ok {
		panic(fmt.Sprintf("tool %s: its output is paged but its input does not embed tool.Page", name))
	}
	slices.SortStableFunc(b.fields, func(x, y pagedField) int { return x.rank - y.rank })
	return b
}

// entry is one list item or line of a paged field, as JSON.
type entry struct {
	field int
	index int    // in the slice; -1 for a line
	line  string // the line, for a string field
	size  int
	cut   bool
}

// apply bounds out (whose JSON is full) to the page in asks for. It returns
// the result's JSON, or a Failure for a page past the last one.
func (b *bounded) apply(c *callctx.Ctx, tool string, in any, out reflect.Value, full []byte) ([]byte, error) {
	page := in.(pager).pageNumber()
	if len(full) <= ResultBudget && page == 1 {
		return full, nil
	}
	var entries []entry
	for fi, f := range b.fields {
		v := out.FieldByIndex(f.index)
		if f.lines {
			for _, l := range strings.SplitAfter(v.String(), "\n") {
				if l != "" {
					entries = append(entries, entry{field: fi, index: -1, line: l, size: len(quoteJSON(l))})
				}
			}
			continue
		}
		for i := range v.Len() {
			raw, err := json.Marshal(v.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			entries = append(entries, entry{field: fi, index: i, size: len(raw) + 1})
		}
	}
	if len(full) <= ResultBudget && page > 1 {
		return nil, &Failure{Reason: fmt.Sprintf("page %d does not exist: the whole result fits on page 1", page)}
	}

	// What the page holds besides its entries: the scalars, the empty
	// paged fields and a truncated object as large as it can get.
	skeleton := reflect.New(out.Type()).Elem()
	skeleton.Set(out)
	b.empty(skeleton)
	path := "agent-state/" + c.Agent + "-" + tool + "-result.json"
	probe := &Truncated{Page: 1 << 20, Pages: 1 << 20, NextPage: 1 << 20, Entries: len(entries), Shown: len(entries), FullResult: path, Note: strings.Repeat("x", 400)}
	skeleton.FieldByIndex(b.truncated).Set(reflect.ValueOf(probe))
	fixed, err := json.Marshal(skeleton.Interface())
	if err != nil {
		return nil, err
	}
	room := max(ResultBudget-len(fixed), 2<<10)

	// Pages are filled in order, entry by entry; an entry larger than a
	// page on its own is cut to fit one.
	var pages [][]entry
	var cur []entry
	used := 0
	for _, e := range entries {
		if e.size > room {
			e.cut = true
			e.size = room
		}
		if used+e.size > room && len(cur) > 0 {
			pages = append(pages, cur)
			cur, used = nil, 0
		}
		cur = append(cur, e)
		used += e.size
	}
	if len(cur) > 0 || len(pages) == 0 {
		pages = append(pages, cur)
	}
	if page > len(pages) {
		return nil, &Failure{Reason: fmt.Sprintf("page %d is past the last page: the result has %d", page, len(pages))}
	}

	result := reflect.New(out.Type()).Elem()
	result.Set(out)
	b.empty(result)
	cut := 0
	texts := make([]strings.Builder, len(b.fields))
	for _, e := range pages[page-1] {
		f := b.fields[e.field]
		dst := result.FieldByIndex(f.index)
		if f.lines {
			line := e.line
			if e.cut {
				line = cutString(line, room-64) + "\n"
				cut++
			}
			texts[e.field].WriteString(line)
			continue
		}
		item := out.FieldByIndex(f.index).Index(e.index)
		if e.cut {
			shrunk, err := shrink(item, room-64)
			if err != nil {
				return nil, err
			}
			item = shrunk
			cut++
		}
		dst.Set(reflect.Append(dst, item))
	}
	for i, f := range b.fields {
		if f.lines {
			result.FieldByIndex(f.index).SetString(texts[i].String())
		}
	}
	t := &Truncated{Page: page, Pages: len(pages), Entries: len(entries), Shown: len(pages[page-1])}
	if page < len(pages) {
		t.NextPage = page + 1
	}
	t.Note = fmt.Sprintf("the whole result is %d bytes of JSON, more than the %d a result returns at once: the totals are whole, and this page holds entries %d-%d of %d, the most useful first",
		len(full), ResultBudget, start(pages, page)+1, start(pages, page)+len(pages[page-1]), len(entries))
	if cut > 0 {
		t.Note += fmt.Sprintf("; %d entries larger than a page are shortened here", cut)
	}
	if err := writeFull(c, path, full); err != nil {
		t.Note += fmt.Sprintf("; the whole result could not be written to a file (%v): ask for the other pages", err)
	} else {
		t.FullResult = path
		t.Note += "; " + path + " holds the whole result"
	}
	if t.NextPage > 0 {
		t.Note += fmt.Sprintf("; call again with the same arguments and page %d for the next entries", t.NextPage)
	}
	result.FieldByIndex(b.truncated).Set(reflect.ValueOf(t))
	return json.Marshal(result.Interface())
}

// start is the index of the first entry of page (1-based).
func start(pages [][]entry, page int) int {
	n := 0
	for _, p := range pages[:page-1] {
		n += len(p)
	}
	return n
}

// empty clears the paged fields of v: empty slices (not null, which the
// output schema would not allow) and empty strings.
func (b *bounded) empty(v reflect.Value) {
	for _, f := range b.fields {
		fv := v.FieldByIndex(f.index)
		if f.lines {
			fv.SetString("")
		} else {
			fv.Set(reflect.MakeSlice(fv.Type(), 0, 0))
		}
	}
}

// writeFull writes the whole result, indented, where the agent may write
// (its own agent-state files).
func writeFull(c *callctx.Ctx, path string, full []byte) error {
	if c == nil || c.Files == nil {
		return fmt.Errorf("this session has no file door")
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, full, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return c.Files.WriteFile(path, buf.Bytes())
}

// shrink returns a copy of item whose JSON fits limit bytes: every string
// and list in it cut to a length that halves until it fits.
func shrink(item reflect.Value, limit int) (reflect.Value, error) {
	raw, err := json.Marshal(item.Interface())
	if err != nil {
		return reflect.Value{}, err
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return reflect.Value{}, err
	}
	maxStr, maxList := limit, limit
	b := raw
	for len(b) > limit && (maxStr > 64 || maxList > 1) {
		maxStr, maxList = max(maxStr/2, 64), max(maxList/2, 1)
		b, _ = json.Marshal(trim(doc, maxStr, maxList))
	}
	out := reflect.New(item.Type())
	if err := json.Unmarshal(b, out.Interface()); err != nil {
		return reflect.Value{}, err
	}
	return out.Elem(), nil
}

// trim is doc with every string cut to maxStr bytes and every list to
// maxList items.
func trim(doc any, maxStr, maxList int) any {
	switch v := doc.(type) {
	case string:
		return cutString(v, maxStr)
	case []any:
		out := make([]any, 0, min(len(v), maxList))
		for _, x := range v[:min(len(v), maxList)] {
			out = append(out, trim(x, maxStr, maxList))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = trim(x, maxStr, maxList)
		}
		return out
	}
	return doc
}

// cutString cuts s to at most n bytes on a rune boundary, marking the cut.
func cutString(s string, n int) string {
	const mark = " [cut: the whole text is in full_result]"
	if len(s) <= n {
		return s
	}
	n = max(n-len(mark), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
