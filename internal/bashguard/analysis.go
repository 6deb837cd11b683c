package bashguard

import (
	"fmt"
	"strings"
)

// Analysis is what the shell parser sees of a command: the programs that
// run, with their arguments as bash would pass them, where their standard
// input comes from and where their output goes, the URLs handed to HTTP
// clients, the inline JSON found, and the parts the guard cannot know
// without running the command. The guard decides on it (Verdict); policy
// rules may read the same facts.
type Analysis struct {
	// Commands are the simple commands that run, in the order the guard
	// met them, wrappers and nested shells included: timeout 5 curl … is
	// timeout, then curl reached through timeout.
	Commands []Command
	// Findings are inline JSON handed to an HTTP client.
	Findings []Finding
	// Unknowns are the parts of the command the guard cannot resolve.
	Unknowns []Unknown
}

// Command is one simple command that runs.
type Command struct {
	// Name is the program (curl for /usr/bin/curl, for a copy of curl
	// under another name when Options.Programs finds it, python3 for
	// python3.11), the builtin, or the function name; "" when it is
	// computed at run time (Dynamic).
	Name string
	// Unsure says why Name may not be what runs ("" when it is): the
	// word names a file the agent can write, it may be a function or an
	// alias defined on a path that was not taken, code the analysis could
	// not read ran before it … The guard still models Name; cmd's facts
	// take the program as unknown.
	Unsure string
	// Args are the words bash passes, Args[0] the program as written.
	// Parts the guard cannot know (a variable from the environment, a
	// program's output) are shown as "…".
	Args []string
	// Fixed is how many of Args are known to stand where they are: an
	// argument whose expansion may make several words or none (a glob,
	// an unquoted value the analysis does not know) is shown as "…", and
	// the number and places of those after it are not known.
	Fixed int
	// Via says how the command is reached, outermost first: "bash -c",
	// "eval", "function f", "alias c", "xargs", "timeout", "find -exec",
	// "trap EXIT", "env -S", "$(…)" …
	Via []string
	// Stdin says where the standard input comes from ("a here-string",
	// "a pipe from echo", "the file body.json" …); "" when inherited.
	Stdin string
	// Redirects are the statement's redirections with their targets.
	Redirects []Redirect
	// HTTP is set when the program is an HTTP client.
	HTTP *HTTPUse
	// Shell is set when the command runs shell code (bash -c, eval,
	// source, a shell reading a script).
	Shell *ShellUse
	// Dynamic is true when the program's name is computed at run time.
	Dynamic bool
	// Defined is true for commands in a function body or an alias value
	// analysed where it is defined (it runs when something calls it).
	Defined bool
	// Function is true for a call of a shell function the command
	// defined (Name is the function's; its body's commands follow, with
	// "function NAME" in their Via).
	Function bool
	// Line and Col locate the command in the text as given (1-based);
	// commands inside a nested script (bash -c, eval, an alias) carry the
	// position of the outer command that runs it.
	Line, Col int
}

// Redirect is one redirection of a statement.
type Redirect struct {
	// Op is the operator as written: <, >, >>, <<<, <<, &>, >&, 2> …
	Op string
	// Target is the file, descriptor or heredoc delimiter.
	Target string
}

// HTTPUse is what an HTTP client is handed.
type HTTPUse struct {
	// URLs are the URLs (or httpie shorthands such as :3000/x).
	URLs []string
	// Hosts are the URLs' hosts.
	Hosts []string
	// ReadsStdin is true when the client sends its standard input.
	ReadsStdin bool
}

// ShellUse is shell code a command runs.
type ShellUse struct {
	// From says where the code comes from: "argument" (bash -c, eval),
	// "stdin" (a here-string, heredoc or pipe), "file", "process
	// substitution", "trap", "alias".
	From string
	// Known is false when the guard could not read the code.
	Known bool
}

// Finding is inline JSON handed to an HTTP client.
type Finding struct {
	// Program is the client (curl, wget …).
	Program string
	// Via says how: "-d", "--json", "a here-string", "a pipe from echo",
	// "a URL query" …
	Via string
	// Payload is the JSON as the client would receive it.
	Payload string
	// Allowed is the command in the allowed form: the JSON written to
	// FileHint first, the client reading the file.
	Allowed   string
	Line, Col int
}

// UnknownKind names what the guard could not resolve.
type UnknownKind string

// The kinds of Unknown.
const (
	// UnknownProgram: the program's name is computed at run time.
	UnknownProgram UnknownKind = "program"
	// UnknownCode: shell code built at run time or read from a program's
	// output (eval "$x", bash -c "$(…)", ${x@P}, a pipe into a shell).
	UnknownCode UnknownKind = "code"
	// UnknownData: text of the command transformed by a program the guard
	// does not follow before it reaches an HTTP client.
	UnknownData UnknownKind = "data"
)

// Unknown is a part of the command the guard cannot resolve statically.
type Unknown struct {
	Kind UnknownKind
	// What is the part as written or described.
	What string
	// Reason says why it cannot be known.
	Reason string
	// Instead says what to write so that the guard can read it.
	Instead string
	// ReachesHTTP is true when the part could hand data to an HTTP
	// client, ReachesShell when it could run as shell code. The guard
	// refuses an Unknown that reaches either.
	ReachesHTTP, ReachesShell bool
	Line, Col                 int
}

// Options are what an analysis may know of the machine the command runs
// on. The zero value knows nothing of it.
type Options struct {
	// Programs finds the file a command word runs, so that a program is
	// identified by what it is rather than by its name; nil names a
	// program by its name as written (versioned interpreter names such as
	// python3.11 taken as their interpreter).
	Programs Programs
	// Dir is where the command starts: "" where Programs looks from, an
	// absolute path, or one relative to that.
	Dir string
}

// Programs finds what bash runs for a command word. Implementations read
// the file system (internal/progid); the analysis itself reads nothing.
type Programs interface {
	// Find says which program word runs when bash looks it up with path
	// (the PATH the command runs with; a segment holding an unknown part
	// is shown as "…") from dir (the working directory: "" where the
	// command starts, an absolute path, or one relative to the start;
	// dirKnown false when it is not known).
	Find(word, path, dir string, dirKnown bool) Program
	// Path is the PATH commands start with.
	Path() string
}

// Program is what a command word runs.
type Program struct {
	// Name is the program: the name of the known program the file is
	// (a link or copy of curl is curl), else the word's base name.
	Name string
	// File is the file bash runs ("" when none is found: bash would
	// answer "command not found").
	File string
	// Unsure says why the program cannot be known ("" when it can): the
	// file lies where the agent could have written it, a directory of
	// the search is not known …
	Unsure string
}

// Analyze parses command and follows what it would run. The error is a
// *Error for a command the guard cannot read at all (unparsable, too long,
// over the budget); such a command is refused.
func Analyze(command string) (a *Analysis, err error) {
	return AnalyzeWith(command, Options{})
}

// AnalyzeWith is Analyze knowing what o says of the machine.
func AnalyzeWith(command string, o Options) (a *Analysis, err error) {
	if len(command) > MaxCommandLen {
		return nil, &Error{Kind: ErrTooLong, Detail: fmt.Sprintf("the command is %d bytes, over the %d-byte limit", len(command), MaxCommandLen)}
	}
	if strings.ContainsAny(command, marks) {
		return nil, &Error{Kind: ErrUnparsable, Detail: "the command holds characters from Unicode's private use area (U+E000–U+E003)"}
	}
	c := newChecker(o)
	defer c.recoverInto(&err)
	c.script(command, nil)
	c.finishTraps()
	if c.b.err != nil {
		return nil, c.b.err
	}
	return c.a, nil
}

// AnalyzeArgv follows a command given as an argument vector run without a
// shell (spawn_units' argv): argv[0] is the program, each element one
// argument as the program receives it; env are environment variables the
// command is given (a shell it runs sees them).
func AnalyzeArgv(argv []string, env map[string]string) (a *Analysis, err error) {
	return AnalyzeArgvWith(argv, env, Options{})
}

// AnalyzeArgvWith is AnalyzeArgv knowing what o says of the machine.
func AnalyzeArgvWith(argv []string, env map[string]string, o Options) (a *Analysis, err error) {
	total := 0
	for k, v := range env {
		total += len(k) + len(v) + 2
		if strings.ContainsAny(k+v, marks) {
			return nil, &Error{Kind: ErrUnparsable, Detail: "an environment variable holds characters from Unicode's private use area (U+E000–U+E003)"}
		}
	}
	for _, s := range argv {
		total += len(s) + 1
		if strings.ContainsAny(s, marks) {
			return nil, &Error{Kind: ErrUnparsable, Detail: "an argument holds characters from Unicode's private use area (U+E000–U+E003)"}
		}
	}
	if total > MaxCommandLen {
		return nil, &Error{Kind: ErrTooLong, Detail: fmt.Sprintf("the arguments are %d bytes, over the %d-byte limit", total, MaxCommandLen)}
	}
	c := newChecker(o)
	defer c.recoverInto(&err)
	c.line, c.col = 1, 1
	for k, v := range env {
		c.sc.vars[k], c.sc.exported[k] = v, on
	}
	c.run(argv, runOpts{})
	if c.b.err != nil {
		return nil, c.b.err
	}
	return c.a, nil
}

// Verdict is the guard's decision on the analysis: nil to allow, else a
// *Error saying why not and what to write instead. Inline JSON handed to
// an HTTP client is refused (ErrInlineJSON); so is an Unknown that could
// reach an HTTP client or a shell (ErrUnknowable).
func (a *Analysis) Verdict() error {
	if len(a.Findings) > 0 {
		f := a.Findings[0]
		return &Error{Kind: ErrInlineJSON, Program: f.Program, Via: f.Via, Payload: f.Payload, Allowed: f.Allowed}
	}
	for _, u := range a.Unknowns {
		if u.ReachesHTTP || u.ReachesShell {
			return &Error{Kind: ErrUnknowable, Detail: u.Reason, Instead: u.Instead, Payload: u.What}
		}
	}
	return nil
}

// Check returns nil when command may run, or a *Error saying why not and
// what to run instead.
func Check(command string) error {
	return CheckWith(command, Options{})
}

// CheckWith is Check knowing what o says of the machine.
func CheckWith(command string, o Options) error {
	a, err := AnalyzeWith(command, o)
	if err != nil {
		return err
	}
	return a.Verdict()
}

// CheckArgv is Check for a command run without a shell, with env in its
// environment.
func CheckArgv(argv []string, env map[string]string) error {
	return CheckArgvWith(argv, env, Options{})
}

// CheckArgvWith is CheckArgv knowing what o says of the machine.
func CheckArgvWith(argv []string, env map[string]string, o Options) error {
	a, err := AnalyzeArgvWith(argv, env, o)
	if err != nil {
		return err
	}
	return a.Verdict()
}
