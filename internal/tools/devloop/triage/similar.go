package triage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/toolhost/toolhost/internal/bugs"
	"github.com/toolhost/toolhost/internal/callctx"
	"github.com/toolhost/toolhost/internal/tool"
)

// IndexPath is the cached TF-IDF index of all bugs.
const IndexPath = "triage/similar-index.gob"

// indexVersion changes whenever the index layout or the tokenizer does, so
// an old cache is rebuilt rather than misread.
const indexVersion = 1

// SimilarBug is one ranked neighbour.
type SimilarBug struct {
	BugID  string  `json:"bug_id" jsonschema_description:"the similar bug"`
	Title  string  `json:"title,omitempty" jsonschema_description:"its title"`
	Status string  `json:"status,omitempty" jsonschema_description:"its status"`
	Score  float64 `json:"score" jsonschema_description:"cosine similarity of the TF-IDF vectors, 0-1"`
}

// FindSimilarInput is a bug or a text to find neighbours of.
type FindSimilarInput struct {
	BugID string `json:"bug_id,omitempty" jsonschema:"pattern=^BUG-[0-9]{4\\,}$" jsonschema_description:"find bugs similar to this one (it is excluded from the results); give bug_id or text, not both"`
	Text  string `json:"text,omitempty" jsonschema:"maxLength=200000" jsonschema_description:"find bugs similar to this text (a title, an error message); give bug_id or text, not both"`
	TopK  int    `json:"top_k,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"how many bugs to return, best first (default 5)"`
	tool.Page
}

// IndexInfo describes the index a search used.
type IndexInfo struct {
	Bugs    int  `json:"bugs" jsonschema_description:"bugs in the index"`
	Terms   int  `json:"terms" jsonschema_description:"distinct terms"`
	Rebuilt bool `json:"rebuilt" jsonschema_description:"true when the bugs changed since the cached index and it was rebuilt for this call"`
	Skipped int  `json:"skipped,omitempty" jsonschema_description:"bug files left out because they are not valid bug JSON"`
}

// FindSimilarOutput is the result of find_similar_bug.
type FindSimilarOutput struct {
	tool.Status
	BugID     string          `json:"bug_id,omitempty" jsonschema_description:"the bug searched for (empty for text)"`
	Similar   []SimilarBug    `json:"similar" page:"1" jsonschema_description:"the most similar bugs, highest score first; bugs sharing no term are left out"`
	Index     IndexInfo       `json:"index" jsonschema_description:"the index searched"`
	Truncated *tool.Truncated `json:"truncated,omitempty" jsonschema_description:"set when the result was too large to return at once: which page this is, how to get the next, and the file holding the whole result"`
}

// FindSimilarBug is the find_similar_bug tool.
func FindSimilarBug() tool.Tool {
	return tool.New(tool.Spec{
		Name:  "find_similar_bug",
		Title: "Find similar bugs",
		Description: "Rank the project's bugs by TF-IDF cosine similarity of their titles and evidence text (test names, log quotes, repro steps) " +
			"to a bug (itself excluded) or to a text. The index is cached in triage/similar-index.gob and rebuilt only when a bug file changed. " +
			"For a bug, records the similar bugs in triage/triage.json.",
		Effect: tool.Additive, Idempotent: true, Timeout: 60 * time.Second,
	}, findSimilar)
}

func findSimilar(ctx context.Context, c *callctx.Ctx, in FindSimilarInput) (FindSimilarOutput, error) {
	if (in.BugID == "") == (strings.TrimSpace(in.Text) == "") {
		return FindSimilarOutput{}, &tool.ValidationError{Field: "bug_id", Reason: "give exactly one of bug_id (e.g. BUG-0001) or text (a non-blank title or error message)"}
	}
	topK := in.TopK
	if topK == 0 {
		topK = 5
	}
	var bug *bugs.Bug
	if in.BugID != "" {
		var err error
		if bug, err = loadBug(ctx, c, in.BugID); err != nil {
			return FindSimilarOutput{}, err
		}
	}
	idx, rebuilt, err := loadIndex(ctx, c)
	if err != nil {
		return FindSimilarOutput{}, err
	}
	var q []posting
	self := -1
	if bug != nil {
		self = idx.position(bug.ID)
		if self >= 0 {
			q = idx.Docs[self]
		} else {
			q = idx.vector(bugText(bug))
		}
	} else {
		q = idx.vector(in.Text)
	}
	out := FindSimilarOutput{Status: tool.Status{OK: true}, Similar: idx.rank(q, self, topK),
		Index: IndexInfo{Bugs: len(idx.IDs), Terms: len(idx.Terms), Rebuilt: rebuilt, Skipped: idx.Skipped}}
	if bug != nil {
		out.BugID = bug.ID
		if err := updateSummary(c, bug, func(e *SummaryEntry) { e.Similar = out.Similar }); err != nil {
			return FindSimilarOutput{}, err
		}
	}
	return out, nil
}

// posting is one term of a document vector with its (L2-normalised) weight.
type posting struct {
	Term int32
	W    float32
}

// similarIndex is the cached index. Doc vectors are L2-normalised, so a dot
// product is the cosine.
type similarIndex struct {
	Version     int
	Fingerprint string
	IDs         []string
	Titles      []string
	Statuses    []string
	Terms       []string
	IDF         []float32
	Docs        [][]posting
	Skipped     int

	termID   map[string]int32
	inverted [][]docWeight
}

type docWeight struct {
	Doc int32
	W   float32
}

// prepare builds the lookup tables that are not stored.
func (x *similarIndex) prepare() {
	x.termID = make(map[string]int32, len(x.Terms))
	for i, t := range x.Terms {
		x.termID[t] = int32(i)
	}
	x.inverted = make([][]docWeight, len(x.Terms))
	for d, vec := range x.Docs {
		for _, p := range vec {
			x.inverted[p.Term] = append(x.inverted[p.Term], docWeight{Doc: int32(d), W: p.W})
		}
	}
}

func (x *similarIndex) position(id string) int {
	i := sort.SearchStrings(x.IDs, id)
	if i < len(x.IDs) && x.IDs[i] == id {
		return i
	}
	return -1
}

// vector turns a text into a normalised TF-IDF vector over the index's
// terms; unknown terms carry no weight.
func (x *similarIndex) vector(text string) []posting {
	tf := map[int32]int{}
	for _, t := range tokenize(text) {
		if id, ok := x.termID[t]; ok {
			tf[id]++
		}
	}
	return x.weigh(tf)
}

// weigh turns term counts into a normalised TF-IDF vector (tf = 1+ln n).
func (x *similarIndex) weigh(tf map[int32]int) []posting {
	vec := make([]posting, 0, len(tf))
	for id, n := range tf {
		vec = append(vec, posting{Term: id, W: float32((1 + math.Log(float64(n))) * float64(x.IDF[id]))})
	}
	return normalize(vec)
}

// rank scores every document against q through the inverted index.
func (x *similarIndex) rank(q []posting, self, topK int) []SimilarBug {
	scores := make([]float32, len(x.IDs))
	for _, p := range q {
		for _, dw := range x.inverted[p.Term] {
			scores[dw.Doc] += p.W * dw.W
		}
	}
	// The topK best, kept in order as the scores are read (higher score
	// first, then lower id): sorting every bug sharing a term, nearly all
	// of them in a large project, made a search grow faster than the bugs.
	better := func(a, b int) bool {
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		return x.IDs[a] < x.IDs[b]
	}
	cand := make([]int, 0, topK+1)
	for d, s := range scores {
		if s <= 0 || d == self || len(cand) == topK && !better(d, cand[topK-1]) {
			continue
		}
		i := sort.Search(len(cand), func(i int) bool { return better(d, cand[i]) })
		cand = slices.Insert(cand, i, d)
		if len(cand) > topK {
			cand = cand[:topK]
		}
	}
	out := make([]SimilarBug, 0, len(cand))
	for _, d := range cand {
		out = append(out, SimilarBug{BugID: x.IDs[d], Title: x.Titles[d], Status: x.Statuses[d],
			Score: math.Round(float64(min(scores[d], 1))*1e4) / 1e4})
	}
	return out
}

func normalize(vec []posting) []posting {
	var sum float64
	for _, p := range vec {
		sum += float64(p.W) * float64(p.W)
	}
	if sum == 0 {
		return nil
	}
	n := float32(math.Sqrt(sum))
	for i := range vec {
		vec[i].W /= n
	}
	sort.Slice(vec, func(i, j int) bool { return vec[i].Term < vec[j].Term })
	return vec
}

// stopwords are words too common in bug reports to tell bugs apart.
var stopwords = map[string]bool{
	"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true, "on": true,
	"is": true, "it": true, "at": true, "for": true, "with": true, "be": true, "by": true, "as": true, "are": true,
	"was": true, "not": true, "no": true, "when": true, "from": true, "this": true, "that": true, "but": true,
}

// tokenize lower-cases text and splits it into terms of letters and digits.
func tokenize(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := words[:0]
	for _, w := range words {
		if len(w) < 2 || len(w) > 40 || stopwords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// bugText is what the index knows of a bug: its title and evidence text.
func bugText(b *bugs.Bug) string {
	parts := []string{b.Title}
	for _, e := range b.Evidence {
		parts = append(parts, e.Test, e.TestFile, e.Log, e.Repro)
	}
	return strings.Join(parts, "\n")
}

// bugSet lists the bugs with a fingerprint of their summaries (id,
// status, evidence count, last change): it changes whenever a bug is
// added, removed or changed.
func bugSet(ctx context.Context, c *callctx.Ctx) ([]string, string, error) {
	sums, err := c.Bugs.Summaries(ctx)
	if err != nil {
		return nil, "", err
	}
	h := sha256.New()
	var ids []string
	for _, s := range sums {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%s\n", s.ID, s.Status, s.Evidence, s.UpdatedAt.UnixNano(), s.Unreadable)
		ids = append(ids, s.ID) // an unreadable one is counted as skipped
	}
	sort.Strings(ids)
	return ids, hex.EncodeToString(h.Sum(nil)), nil
}

// loadIndex returns the cached index when the bugs are unchanged, else
// rebuilds and stores it. The rebuild holds a cross-process lock so two
// triager processes do not both rebuild.
func loadIndex(ctx context.Context, c *callctx.Ctx) (*similarIndex, bool, error) {
	ids, fp, err := bugSet(ctx, c)
	if err != nil {
		return nil, false, err
	}
	if x := readIndex(c, fp); x != nil {
		return x, false, nil
	}
	unlock, err := c.Files.Lock(IndexPath)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if x := readIndex(c, fp); x != nil {
		return x, false, nil
	}
	x := buildIndex(ctx, c, ids, fp)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(x); err != nil {
		return nil, false, fmt.Errorf("encode %s: %w", IndexPath, err)
	}
	if err := c.Files.WriteFile(IndexPath, buf.Bytes()); err != nil {
		return nil, false, fmt.Errorf("write %s: %w", IndexPath, err)
	}
	x.prepare()
	return x, true, nil
}

// readIndex returns the cached index if it matches the fingerprint.
func readIndex(c *callctx.Ctx, fp string) *similarIndex {
	data, err := readRel(c, IndexPath)
	if err != nil {
		return nil
	}
	var x similarIndex
	if gob.NewDecoder(bytes.NewReader(data)).Decode(&x) != nil || x.Version != indexVersion || x.Fingerprint != fp {
		return nil
	}
	x.prepare()
	return &x
}

// buildIndex computes TF-IDF vectors (tf = 1+ln n, idf = ln((N+1)/(df+1))+1)
// for every readable bug.
func buildIndex(ctx context.Context, c *callctx.Ctx, ids []string, fp string) *similarIndex {
	x := &similarIndex{Version: indexVersion, Fingerprint: fp}
	termID := map[string]int32{}
	var df []int
	var tfs []map[int32]int
	for _, id := range ids {
		b, err := c.Bugs.Get(ctx, id)
		if err != nil {
			x.Skipped++
			continue
		}
		tf := map[int32]int{}
		for _, t := range tokenize(bugText(b)) {
			tid, ok := termID[t]
			if !ok {
				tid = int32(len(x.Terms))
				termID[t] = tid
				x.Terms = append(x.Terms, t)
				df = append(df, 0)
			}
			if tf[tid] == 0 {
				df[tid]++
			}
			tf[tid]++
		}
		x.IDs = append(x.IDs, b.ID)
		x.Titles = append(x.Titles, b.Title)
		x.Statuses = append(x.Statuses, b.Status)
		tfs = append(tfs, tf)
	}
	n := float64(len(x.IDs))
	x.IDF = make([]float32, len(x.Terms))
	for i, d := range df {
		x.IDF[i] = float32(math.Log((n+1)/float64(d+1)) + 1)
	}
	x.Docs = make([][]posting, len(tfs))
	for d, tf := range tfs {
		x.Docs[d] = x.weigh(tf)
	}
	return x
}
