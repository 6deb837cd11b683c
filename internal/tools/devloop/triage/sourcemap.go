//go:build !bench_no_routes

package triage

import (
	"encoding/json"
	"errors"
	"strings"
)

// sourceMap maps positions of esbuild's output back to the TypeScript
// source: for each generated line, its mapped segments in column order.
// A line holds code of several source lines where esbuild moved code
// (decorators lowered into a call after the class), so the column decides.
type sourceMap struct {
	lines [][]segment // generated line (0-based) → its segments
}

// segment maps a generated column to a source line (1-based).
type segment struct{ col, srcLine int }

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeSourceMap reads the "mappings" of a version 3 source map.
func decodeSourceMap(raw []byte) (*sourceMap, error) {
	var sm struct {
		Version  int    `json:"version"`
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(raw, &sm); err != nil {
		return nil, err
	}
	if sm.Version != 3 {
		return nil, errors.New("not a version 3 source map")
	}
	m := &sourceMap{}
	srcLine := 0
	for _, line := range strings.Split(sm.Mappings, ";") {
		var segs []segment
		col := 0
		for _, seg := range strings.Split(line, ",") {
			if seg == "" {
				continue
			}
			fields, err := vlq(seg)
			if err != nil {
				return nil, err
			}
			col += fields[0]
			if len(fields) >= 4 {
				srcLine += fields[2]
				segs = append(segs, segment{col, srcLine + 1})
			}
		}
		m.lines = append(m.lines, segs)
	}
	return m, nil
}

// vlq decodes one segment's base64 VLQ numbers.
func vlq(seg string) ([]int, error) {
	var out []int
	val, shift := 0, 0
	for i := 0; i < len(seg); i++ {
		d := strings.IndexByte(b64, seg[i])
		if d < 0 {
			return nil, errors.New("bad base64 in source map")
		}
		val |= (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		n := val >> 1
		if val&1 != 0 {
			n = -n
		}
		out = append(out, n)
		val, shift = 0, 0
	}
	return out, nil
}

// originalLine is the source line of 1-based generated line n and 0-based
// column col: the last segment at or before the column (else the line's
// first), else the nearest mapped line above.
func (m *sourceMap) originalLine(n, col int) int {
	for i := min(n-1, len(m.lines)-1); i >= 0; i-- {
		segs := m.lines[i]
		if len(segs) == 0 {
			continue
		}
		if i < n-1 {
			return segs[len(segs)-1].srcLine
		}
		line := segs[0].srcLine
		for _, sg := range segs {
			if sg.col > col {
				break
			}
			line = sg.srcLine
		}
		return line
	}
	return n
}
