// Package bashguard decides whether a shell command hands inline JSON to an
// HTTP client, the mistake the devloop agents make most: JSON written inside
// a shell command breaks on quoting and escaping, so the command must write
// the JSON to a file and pass the file (curl -d @file). It decides on what
// the command would run, and refuses what it cannot know.
//
// # What the parser sees: Analysis
//
// Analyze parses a command with mvdan.cc/sh/v3/syntax (bash dialect) and
// follows it the way bash would run it, without running anything:
//
//   - words are expanded by mvdan.cc/sh/v3/expand: quotes, $'…', ${x@E},
//     brace expansion, parameter operations, and variables the command
//     assigns (scalars, arrays, namerefs, read/mapfile/printf -v, $_);
//   - functions, aliases, hash -p, set --, shift, trap strings, ${x@P} and
//     values that arithmetic evaluates (a[$(cmd)]) are resolved to the code
//     they run;
//   - wrappers (command, env with option clusters and -S, exec, nice,
//     timeout, sudo, xargs with its item splitting, find -exec, watch, ssh,
//     su -c …) to the command they run; eval, source and shells (bash -c
//     with $0 and positional arguments, a shell reading a script from
//     stdin, /dev/stdin, a process substitution, a here-string or a file the
//     command wrote) to their script, in a child scope that sees only
//     exported variables and functions;
//   - standard input through pipelines, groups, loops, here-strings,
//     heredocs, < <(…), exec < …, exec 3<<< …, and what programs print:
//     echo (with -e, and sh's), printf (escapes, %b, formats), cat, tee and
//     filters, jq (the identity and simple paths evaluated, -n constructors
//     as JSON), base64, xxd -r -p, rev, which/command -v, basename …
//
// The analysis follows one path at a time and joins where bash would take
// one of several (state.go): after an if, &&, ||, case, a loop or a return
// that may have run, what the paths left differently is unknown; a
// subshell, a pipeline's stage, $(…), a background job and a function
// definition change a copy that is thrown away; NAME=value before a
// command and local variables are undone; a glob or an unquoted unknown
// value makes words of unknown number; output is used as a value only
// where the analysis redoes exactly what bash prints. So what it reports
// as known (a program, an argument) is what bash runs whenever that
// command runs; Command.Unsure and Fixed say where that is not so.
// Options.Programs names a program by the file it resolves to (a copy of
// curl is curl; a file an agent may write is unsure); without it a program
// is named as written.
//
// The result, an *Analysis, lists the commands that run (program, the
// arguments bash passes, how each is reached, where its input comes from,
// its redirections, the URLs and hosts an HTTP client is handed, the shell
// code a command runs), the inline JSON found, and the parts the guard
// cannot know (Unknown). Policy rules may read the same facts.
//
// Inside the analysis a value the guard cannot know is a mark from
// Unicode's private use area: outside data (the environment, a file, a
// program's output), text of the command a program transforms in a way the
// guard does not follow when that text could hold JSON (sed, tr, python …),
// or JSON a program builds (jq -n '{a:1}'). Commands holding those runes
// are refused before analysis.
//
// # The decision: Verdict, Check
//
// Refused (ErrInlineJSON): a JSON object or array given to an HTTP client
// (curl, wget, httpie http/https, xh, grpcurl, gh api, and nc/socat/telnet
// or bash's /dev/tcp for raw connections) as an argument or option value
// (curl -d/--data*/--json/-F/--form-string/--data-urlencode, wget
// --post-data/--body-data/-e post_data=…, httpie key:=, key==, grpcurl -d,
// gh api -f/-F), in a form field (a=1&j={…}, percent-encoded too), in a URL
// query, on its standard input or in a file it reads that the command fed
// (a here-string, a heredoc, a pipe from a command that prints it, a
// process substitution, a curl config given with -K). The message shows the
// allowed form: the JSON written to FileHint first.
//
// Refused (ErrUnknowable): a part the guard cannot resolve that could reach
// an HTTP client or a shell: a program name computed at run time that would
// be handed JSON or code (an unknown name with harmless arguments passes),
// shell code built at run time or read from a program's output (eval
// "$(…)", bash -c "$x", curl … | bash), or text the command writes that a
// program the guard does not follow transforms before a client sends it.
// The message says what to write instead.
//
// Allowed, because nothing of it is inline JSON sent by a client: an output
// format (curl -w '{"code":%{http_code}}'), a client's input that comes from
// jq's extraction or a digest (jq -r .name | xargs curl …, sha256sum), data
// from files on disk (the allowed form), braces that are not JSON (awk
// '{print $1}', jq '{id:.id}', {{.State}}, {%H}; the empty {} and [] are
// placeholders), a script file on disk (bash script.sh; the guard reads no
// files), and JSON a shell's quoting turns into something else before it
// reaches the client (watch curl -d '{"a":1}' runs sh -c, which strips the
// quotes). Code in another language (python -c, node -e) is not shell.
//
// CheckArgv decides on a command given as an argument vector run without a
// shell (spawn_units' argv), with the same rules.
//
// # The budget
//
// The guard never allows what it could not finish reading. A command longer
// than MaxCommandLen is refused (ErrTooLong); one that cannot be parsed
// (ErrUnparsable); one that nests more than MaxNesting levels (checked by a
// lexical scan before the parser recurses), re-parses strings more than
// MaxDepth levels, or whose expansion passes MaxValueLen per value,
// MaxTotalBytes in all, MaxFields words, 16 Ki brace words, MaxSteps steps,
// MaxCommands commands or MaxTime (ErrTooComplex). A panic of the parser or
// expander on hostile input is a refusal too.
//
// This package must never execute anything: command substitutions are
// approximated from the commands' text, never run, and globbing and ~user
// lookups are disabled. It reads no files and no environment itself; what
// it knows of the machine comes through Options.Programs.
package bashguard
