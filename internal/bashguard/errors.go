package bashguard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/internal/fault"
)

// Sentinels matched with errors.Is on a *Error.
var (
	// ErrInlineJSON: JSON handed to an HTTP client inline.
	ErrInlineJSON = errors.New("inline JSON in a shell command")
	// ErrUnparsable: the command is not valid bash.
	ErrUnparsable = errors.New("shell command cannot be parsed")
	// ErrTooLong: the command is longer than MaxCommandLen.
	ErrTooLong = errors.New("shell command too long")
	// ErrTooComplex: nesting or expansion beyond the guard's budget.
	ErrTooComplex = errors.New("shell command too complex")
	// ErrUnknowable: a part the guard cannot resolve could reach an HTTP
	// client or a shell.
	ErrUnknowable = errors.New("shell command cannot be checked")
)

// FileHint is the file the suggested command writes the JSON to: the
// command's private temp dir, the one place outside its allow-list a
// confined command may write (and removed after the command), so the form
// the guard asks for also works under the kernel's confinement.
const FileHint = "$TMPDIR/x.json"

// maxShownPayload is the longest payload quoted back in a message.
const maxShownPayload = 2000

// Error is a command the guard blocks.
type Error struct {
	// Kind is one of the sentinels.
	Kind error
	// Program is the HTTP client the JSON was handed to.
	Program string
	// Via says how: "-d", "--json", "key:=", "a here-string", "a pipe" …
	Via string
	// Payload is the JSON as the program would have received it.
	Payload string
	// Allowed is the same command in the allowed form, the JSON written to
	// FileHint first.
	Allowed string
	// Detail explains a parse or budget failure, or why a part cannot be
	// known.
	Detail string
	// Instead says what to write so that the guard can read the command
	// (ErrUnknowable).
	Instead string
}

func (e *Error) Error() string {
	switch e.Kind {
	case ErrInlineJSON:
		return fmt.Sprintf("Bash guard: blocked inline JSON handed to %s via %s. JSON written inside a shell command breaks on quoting and escaping, so it is not allowed: write the JSON to a file first and pass the file (curl -d @file, --json @file, httpie key:=@file, grpcurl -d @ < file, gh api --input file, or < file). Allowed form:\n  %s",
			e.Program, e.Via, e.Allowed)
	case ErrUnparsable:
		return "Bash guard: the command cannot be parsed as bash (" + e.Detail + "); the guard blocks what it cannot read. Fix the quoting or syntax and retry."
	case ErrTooLong:
		return "Bash guard: " + e.Detail + "; put long content in a file and pass the file instead."
	case ErrUnknowable:
		return "Bash guard: " + e.Detail + ", so the guard cannot tell whether it hands inline JSON to an HTTP client or a shell, and refuses it. Instead: " + e.Instead
	default:
		return "Bash guard: " + e.Detail + "; run the inner command directly, in simpler steps."
	}
}

// Is makes errors.Is(err, ErrInlineJSON) (or the other sentinels) true.
func (e *Error) Is(target error) bool { return target == e.Kind }

// RejectionKind makes the error a fault.Rejection.
func (e *Error) RejectionKind() fault.Kind { return fault.Guard }

// shellQuote quotes s for bash in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// allowedForm renders echo '<payload>' > FileHint && <fields>, or
// <producer> > FileHint && <fields> when a program other than echo
// printed the payload (jq -n '{a:1}').
func allowedForm(payload string, producer, fields []string, appendStdin bool) string {
	echo := "echo " + shellQuote(payload)
	switch {
	case len(producer) > 0:
		q := make([]string, len(producer))
		for i, p := range producer {
			q[i] = shellQuote(shown(p))
		}
		echo = strings.Join(q, " ")
	case len(payload) > maxShownPayload:
		echo = fmt.Sprintf("echo '<your JSON, %d bytes>'", len(payload))
	}
	parts := make([]string, 0, len(fields)+2)
	for _, f := range fields {
		parts = append(parts, quoteWithHint(f))
	}
	hint := quoteWithHint(FileHint)
	if appendStdin {
		parts = append(parts, "<", hint)
	}
	return echo + " > " + hint + " && " + strings.Join(parts, " ")
}

// quoteWithHint quotes s for bash, leaving each FileHint in it expanded by
// the shell ("$TMPDIR/x.json") and the rest single-quoted where needed.
func quoteWithHint(s string) string {
	parts := strings.Split(s, FileHint)
	for i, p := range parts {
		if p != "" {
			parts[i] = shellQuote(p)
		}
	}
	return strings.Join(parts, `"`+FileHint+`"`)
}
