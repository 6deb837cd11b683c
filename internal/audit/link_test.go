package audit

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// linkSeeds are lines the fast reading of a row's chain fields must read
// as decoding does, or leave to it: rows as written, and rows edited to
// look like one while decoding to something else.
var linkSeeds = func() []string {
	r := &Row{TS: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), CallID: "c1", Agent: "coder", Tool: "t", Status: StatusOK}
	body := string(r.AppendJSON(nil))
	body = body[:len(body)-1]
	prev := strings.Repeat("ab", 32)
	row := func(b string) string { return b + `,"seq":42,"prev":"` + prev + `"}` }
	return []string{
		row(body),
		row(body + `,"chain":{"event":"rotate"}`),
		row(body + `,"CHAIN":{"event":"start"}`),
		row(body + `,"ch\u0061in":{"event":"start"}`),
		row(body + `,"chaİn":{"event":"start"}`),
		row(body + `,"note":"ünïcode"`),
		row(body + `,"seq":7,"prev":"x"`),
		row(body + `,"x":"\"`),
		row(body + `,"x":[`),
		row(`{"a":1}{"b":2`),
		row(`not json`),
		body + `,"seq":042,"prev":"` + prev + `"}`,
		body + `,"seq":0,"prev":"` + prev + `"}`,
		body + `,"seq":9223372036854775808,"prev":"` + prev + `"}`,
		body + `,"seq":42,"prev":"` + strings.ToUpper(prev) + `"}`,
		body + `,"seq":42,"prev":"` + prev + `" }`,
		string(ChainRecordLine(time.Now(), &ChainRecord{Event: ChainRotate, ID: "x", To: "a"}, 5, [32]byte{1})),
		string(ChainRecordLine(time.Now(), &ChainRecord{Event: ChainStart, ID: "x"}, 1, [32]byte{})),
	}
}()

// FuzzRowLinkSameAsDecoding: whatever a line holds, the fast reading of
// a row's chain fields either leaves it to the decoder or finds what
// decoding the whole line finds, so verify judges every line as before.
func FuzzRowLinkSameAsDecoding(f *testing.F) {
	for _, s := range linkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := rowLink(line)
		if !ok {
			return
		}
		slow, slowOK := decodeLink(line)
		if !slowOK || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v (prev %q), decoded %+v %v", line, fast, *fast.Prev, slow, slowOK)
		}
	})
}

// TestRowLinkReadsRowsAsWritten: the rows every store writes take the
// fast reading (what keeps verify near sha256sum's speed).
func TestRowLinkReadsRowsAsWritten(t *testing.T) {
	if _, ok := rowLink([]byte(linkSeeds[0])); !ok {
		t.Fatalf("a row as AppendChained writes it is left to the decoder: %s", linkSeeds[0])
	}
}
