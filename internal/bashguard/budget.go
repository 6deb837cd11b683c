package bashguard

import (
	"fmt"
	"time"
)

// Limits of the guard. A command over any of them is refused (ErrTooLong or
// ErrTooComplex), never allowed: the guard does not let through what it
// could not finish reading.
const (
	// MaxCommandLen is the longest command analysed, in bytes.
	MaxCommandLen = 64 << 10
	// MaxDepth is how many times a string may be re-parsed as a script
	// (bash -c inside eval inside bash -c …), and how deep function calls
	// and command substitutions are followed.
	MaxDepth = 8
	// MaxNesting is how deep compound commands, groups, substitutions and
	// quotes may nest in one piece of shell text. The parser recurses once
	// per level, so this bounds its stack before it runs.
	MaxNesting = 200
	// MaxValueLen is the longest value (a variable, an expanded word, a
	// stream) the guard keeps; a=$a$a doubling stops here.
	MaxValueLen = 256 << 10
	// MaxTotalBytes bounds all text the guard produces while expanding
	// one command.
	MaxTotalBytes = 16 << 20
	// MaxFields bounds the words all expansions of one command produce
	// (brace ranges such as {1..999999999}).
	MaxFields = 100_000
	// MaxSteps bounds the statements, expansions and program models one
	// analysis runs through (loops, function calls, re-parsed strings).
	MaxSteps = 200_000
	// MaxTime is the wall-clock bound of one analysis, a backstop behind
	// the size and step limits, which refuse the known exhausting commands
	// in milliseconds: the hook must answer well within the agent CLI's
	// timeout, which the CLI treats as allow, while a long but ordinary
	// script on a loaded machine must not be refused for the machine's
	// sake.
	MaxTime = 2 * time.Second
	// MaxCommands bounds the commands one analysis records.
	MaxCommands = 10_000
	// maxCalls bounds the shell function calls one analysis follows.
	maxCalls = 256
	// maxIterations is how many items of a loop (for x in …, while read)
	// the guard runs the body with; further items are merged into one.
	maxIterations = 8
)

// charge counts n units of work (copying the shell's state for a branch).
func (b *budget) charge(n int) {
	b.steps += n / 16
}

// budget counts the work of one analysis.
type budget struct {
	steps  int
	fields int
	bytes  int
	start  time.Time
	err    *Error
}

func newBudget() *budget { return &budget{start: time.Now()} }

// over records the first budget error and returns it.
func (b *budget) over(detail string) *Error {
	if b.err == nil {
		b.err = &Error{Kind: ErrTooComplex, Detail: detail}
	}
	return b.err
}

// step counts one unit of work; it is false once the budget is spent.
func (b *budget) step() bool {
	if b.err != nil {
		return false
	}
	b.steps++
	if b.steps > MaxSteps {
		b.over(fmt.Sprintf("the command takes more than %d steps to analyse (loops, function calls, nested scripts)", MaxSteps))
		return false
	}
	if b.steps&255 == 0 && time.Since(b.start) > MaxTime {
		b.over(fmt.Sprintf("the command takes longer than %v to analyse", MaxTime))
		return false
	}
	return true
}

// text counts n bytes of produced text; false when over a limit.
func (b *budget) text(n int) bool {
	if b.err != nil {
		return false
	}
	if n > MaxValueLen {
		b.over(fmt.Sprintf("a value expands to more than %d bytes", MaxValueLen))
		return false
	}
	b.bytes += n
	if b.bytes > MaxTotalBytes {
		b.over(fmt.Sprintf("the command expands to more than %d bytes in total", MaxTotalBytes))
		return false
	}
	return true
}

// field counts one produced word.
func (b *budget) field() bool {
	if b.err != nil {
		return false
	}
	b.fields++
	if b.fields > MaxFields {
		b.over(fmt.Sprintf("the command expands to more than %d words", MaxFields))
		return false
	}
	return true
}

// nesting returns how deep src nests groups, subshells, substitutions,
// compound commands and quotes, as a lexical scan sees it, stopping once
// it is past limit. The scan runs before the parser so that a deeply nested
// command never reaches the parser's recursion; it may over-count text
// inside heredoc bodies, which only matters for bodies nested MaxNesting
// deep.
func nesting(src string, limit int) int {
	type ctx byte
	const (
		code  ctx = iota // commands: ( { $( ` and keywords nest
		dq               // inside "…": $( ${ ` nest
		brace            // inside ${…}
		bq               // commands inside `…`
	)
	stack := []ctx{code}
	maxDepth := 0
	push := func(c ctx) bool {
		stack = append(stack, c)
		if d := len(stack) - 1; d > maxDepth {
			maxDepth = d
		}
		return maxDepth <= limit
	}
	pop := func() {
		if len(stack) > 1 {
			stack = stack[:len(stack)-1]
		}
	}
	cmdStart := true // at a place where a keyword would start a command
	for i := 0; i < len(src); i++ {
		ch := src[i]
		top := stack[len(stack)-1]
		if top == dq {
			switch ch {
			case '\\':
				i++
			case '"':
				pop()
			case '`':
				if !push(bq) {
					return maxDepth
				}
			case '$':
				if i+1 < len(src) && src[i+1] == '(' {
					i++
					if !push(code) {
						return maxDepth
					}
					cmdStart = true
				} else if i+1 < len(src) && src[i+1] == '{' {
					i++
					if !push(brace) {
						return maxDepth
					}
				}
			}
			continue
		}
		switch ch {
		case '\\':
			i++
			cmdStart = false
		case '\'':
			if j := indexFrom(src, i+1, '\''); j >= 0 {
				i = j
			} else {
				i = len(src)
			}
			cmdStart = false
		case '"':
			if !push(dq) {
				return maxDepth
			}
			cmdStart = false
		case '#':
			if i == 0 || isSpaceByte(src[i-1]) || src[i-1] == ';' {
				if j := indexFrom(src, i, '\n'); j >= 0 {
					i = j - 1
				} else {
					i = len(src)
				}
			}
		case '$':
			if i+1 < len(src) && (src[i+1] == '(' || src[i+1] == '{') {
				c := code
				if src[i+1] == '{' {
					c = brace
				}
				i++
				if !push(c) {
					return maxDepth
				}
				cmdStart = c == code
			}
		case '(', '{':
			if !push(code) {
				return maxDepth
			}
			cmdStart = true
		case ')', '}':
			pop()
			cmdStart = false
		case '`':
			if top == bq {
				pop()
			} else if !push(bq) {
				return maxDepth
			}
			cmdStart = top != bq
		case ';', '&', '|', '\n':
			cmdStart = true
		case ' ', '\t':
		default:
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			if j > i {
				word := src[i:j]
				if cmdStart && (top == code || top == bq) {
					switch word {
					case "if", "case", "while", "until", "for", "select":
						if !push(code) {
							return maxDepth
						}
					case "fi", "esac", "done":
						pop()
					}
				}
				switch word {
				case "then", "do", "else", "elif", "in", "!", "time":
					cmdStart = true
				default:
					cmdStart = false
				}
				i = j - 1
			} else {
				cmdStart = false
			}
		}
	}
	return maxDepth
}

func indexFrom(s string, from int, b byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\t' || b == '\n' }

func isWordByte(b byte) bool {
	return b == '_' || b == '!' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}
