package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/toolhost/toolhost/internal/util/wirejson"
)

// The audit trail is a hash chain over its lines. Every line — a call's row
// or one of the chain's own records — ends with "seq" (its number, counting
// from 1 across rotated files) and "prev" (the sha256, hex, of the line
// before it, without its newline). A line is edited, removed, reordered or
// inserted only by breaking a link that Verify names. The chain's own
// records carry a "chain" object instead of a call's fields:
//
//	start     the first line of a trail: the project and a random chain id
//	continue  the first line of a file after a rotation: the chain id and
//	          the rotated file the chain comes from
//	rotate    the last line of a file before it is rotated: its new name
//	          (also how other processes learn that their descriptor is stale)
//	resume    written after the end of the file was found not to be a line
//	          of the chain: a torn last line (a writer killed inside its
//	          write, a machine crash), which is cut off, or lines written by
//	          something else, which are kept; their length and sha256, so
//	          Verify can tell a crash from an insertion
//
// A checkpoint file (CheckpointPath) anchors the chain's end: the seq and
// hash of a line known to be on stable storage, rewritten after each
// batched fsync. It is what lets Verify notice rows cut off the end.
const (
	ChainStart    = "start"
	ChainContinue = "continue"
	ChainRotate   = "rotate"
	ChainResume   = "resume"
)

// CheckpointPath anchors the chain's end (see Checkpoint).
const CheckpointPath = ".toolhost/audit.checkpoint.json"

// ChainRecord is the "chain" object of the chain's own lines.
type ChainRecord struct {
	Event   string   `json:"event"`
	ID      string   `json:"id,omitempty"`
	Project string   `json:"project,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	From    string   `json:"from,omitempty"`
	To      string   `json:"to,omitempty"`
	Skipped *Skipped `json:"skipped,omitempty"`
}

// Skipped describes bytes a resume record steps over, or (Cut) the torn
// last line it cut off.
type Skipped struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	Cut    bool   `json:"cut,omitempty"`
}

// Checkpoint is CheckpointPath: the newest line of the chain known to be on
// stable storage when it was written.
type Checkpoint struct {
	ID     string    `json:"id"`
	Seq    int64     `json:"seq"`
	SHA256 string    `json:"sha256"`
	TS     time.Time `json:"ts"`
}

// chainLine is a chain record as it is written.
type chainLine struct {
	TS    time.Time    `json:"ts"`
	Chain *ChainRecord `json:"chain"`
	Seq   int64        `json:"seq"`
	Prev  string       `json:"prev"`
}

func (c chainLine) encode() []byte {
	b, _ := json.Marshal(c)
	return b
}

// linkInfo is what the chain needs to know of any line.
type linkInfo struct {
	Seq   int64        `json:"seq"`
	Prev  *string      `json:"prev"`
	Chain *ChainRecord `json:"chain"`
}

// link parses the chain fields of a line; ok is false for a line that is
// not JSON or carries no seq/prev (a torn write, a row from before the
// chain, a foreign line).
func link(line []byte) (linkInfo, bool) {
	if l, ok := rowLink(line); ok {
		return l, true
	}
	return decodeLink(line)
}

// decodeLink is link by decoding the whole line.
func decodeLink(line []byte) (linkInfo, bool) {
	var l linkInfo
	if wirejson.Unmarshal(line, &l) != nil || l.Seq <= 0 || l.Prev == nil {
		return linkInfo{}, false
	}
	return l, true
}

// rowLink reads the chain fields of a call's row the way every store writes
// it (AppendChained: "seq" and "prev" its last members) from the end of the
// line, without decoding the row: decoding every line cost verify three
// times the hashing it must do. It returns what decoding gives, or false
// and leaves the line to the decoder (a chain record, any other form).
// Decoding would give the same because the line is valid JSON (so the
// unescaped quotes of the tail are its top-level members, and the last of
// a repeated key counts), ASCII without \u escapes, and nowhere holds
// "chain" in any case (so no top-level key decodes to the chain field:
// keys match fields case-insensitively).
func rowLink(line []byte) (linkInfo, bool) {
	const tailPrev = `,"prev":"`
	n := len(line) - len(tailPrev) - 64 - 2
	if n < 0 || string(line[len(line)-2:]) != `"}` || string(line[n:n+len(tailPrev)]) != tailPrev {
		return linkInfo{}, false
	}
	prev := line[n+len(tailPrev) : len(line)-2]
	for _, c := range prev {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return linkInfo{}, false
		}
	}
	digits := n
	for digits > 0 && '0' <= line[digits-1] && line[digits-1] <= '9' {
		digits--
	}
	const tailSeq = `,"seq":`
	if d := n - digits; d == 0 || d > 18 || line[digits] == '0' || digits < len(tailSeq) || string(line[digits-len(tailSeq):digits]) != tailSeq {
		return linkInfo{}, false
	}
	if !plainASCII(line) || !wirejson.Valid(line) {
		return linkInfo{}, false
	}
	var seq int64
	for _, c := range line[digits:n] {
		seq = seq*10 + int64(c-'0')
	}
	p := string(prev)
	return linkInfo{Seq: seq, Prev: &p}, true
}

// plainASCII reports whether line is ASCII, has no \u escape and does not
// hold "chain" in any case (see rowLink); eight bytes at a time, and the
// letter h found by the vectorised byte search.
func plainASCII(line []byte) bool {
	i := 0
	for ; i+8 <= len(line); i += 8 {
		if binary.LittleEndian.Uint64(line[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(line); i++ {
		if line[i] >= 0x80 {
			return false
		}
	}
	if bytes.Contains(line, []byte(`\u`)) {
		return false
	}
	for _, h := range []byte("hH") {
		for at := 0; ; {
			k := bytes.IndexByte(line[at:], h)
			if k < 0 {
				break
			}
			j := at + k
			if j > 0 && j+4 <= len(line) && line[j-1]|0x20 == 'c' && line[j+1]|0x20 == 'a' && line[j+2]|0x20 == 'i' && line[j+3]|0x20 == 'n' {
				return false
			}
			at = j + 1
		}
	}
	return true
}

func lineHash(line []byte) [32]byte { return sha256.Sum256(line) }

func hexHash(h [32]byte) string { return hex.EncodeToString(h[:]) }

func newChainID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lastLine returns the last line of b (without its newline) and where it
// starts; complete reports whether b ends with a newline. found is false
// when b holds no line start: the line began before b.
func lastLine(b []byte, whole bool) (line []byte, start int, complete, found bool) {
	complete = len(b) > 0 && b[len(b)-1] == '\n'
	body := b
	if complete {
		body = b[:len(b)-1]
	}
	i := bytes.LastIndexByte(body, '\n')
	if i < 0 && !whole {
		return nil, 0, complete, false
	}
	return body[i+1:], i + 1, complete, true
}

// AppendChained appends the line of a row whose body (the row's JSON
// without its closing brace, AppendJSON minus the last byte) is chained at
// seq after the line whose hash is prev: what every store writes.
func AppendChained(dst, body []byte, seq int64, prev [32]byte) []byte {
	dst = append(dst, body...)
	dst = append(dst, `,"seq":`...)
	dst = appendInt(dst, seq)
	dst = append(dst, `,"prev":"`...)
	dst = hex.AppendEncode(dst, prev[:])
	return append(dst, "\"}"...)
}

// ChainRecordLine is the line of one of the chain's own records at seq
// after the line whose hash is prev (no prev for seq 1).
func ChainRecordLine(ts time.Time, rec *ChainRecord, seq int64, prev [32]byte) []byte {
	p := ""
	if seq > 1 {
		p = hexHash(prev)
	}
	return chainLine{TS: ts, Chain: rec, Seq: seq, Prev: p}.encode()
}

// NewChainID returns a new random chain id.
func NewChainID() string { return newChainID() }

// LineHash is the hash the next line's prev names.
func LineHash(line []byte) [32]byte { return lineHash(line) }
