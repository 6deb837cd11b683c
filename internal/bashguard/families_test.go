package bashguard

import (
	"errors"
	"strings"
	"testing"
)

// U is the URL every family case talks to; the reality test points it at
// a loopback sink.
const U = "http://h/p"

// TCP is a connection bash opens itself; the reality test points it at
// the sink.
const TCP = "/dev/tcp/h/80"

// post is an HTTP request carrying {"a":1}, as written to a connection.
const post = `printf 'POST /p HTTP/1.0\r\nContent-Length: 7\r\n\r\n{"a":1}'`

// familyCase is one command of a family: the verdict the guard must give
// and, for the reality test, whether the command really delivers inline
// JSON when bash runs it.
type familyCase struct {
	name string
	cmd  string
	// want: allow, json (ErrInlineJSON), unknown (ErrUnknowable),
	// complex, parse.
	want string
	// live: the reality test runs it under bash against the sink.
	live bool
	// sink overrides what must reach the sink ("json", "none" or "any");
	// by default json for want=json, none for want=allow, any otherwise.
	// note says why an override is right.
	sink, note string
}

func (tc familyCase) sinkWant() string {
	if tc.sink != "" {
		return tc.sink
	}
	switch tc.want {
	case "json":
		return "json"
	case "allow":
		return "none"
	}
	return "any"
}

// families are the red team's families of issue 22, each with commands of
// our own; every one is decided on what bash would run.
var families = map[string][]familyCase{
	// Escapes the program decodes, not the shell.
	"escapes": {
		{name: "echo -e hex", cmd: `echo -e '\x7b"a":1}' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "printf hex", cmd: `printf '\x7b"a":1}' | curl -s --data-binary @- ` + U, want: "json", live: true},
		{name: "printf %b", cmd: `printf '%b' '\x7b\x22a\x22:1}' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "echo -e octal", cmd: `echo -e '\0173"a":1}' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "printf octal", cmd: `printf '\173"a":1}\n' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "echo -e unicode", cmd: `echo -e '\u007b"a":1}' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "sh's echo decodes by itself", cmd: `sh -c "echo '\0173\"a\":1}'" | curl -s -d @- ` + U, want: "json", live: true},
		{name: "printf -v", cmd: `printf -v b '\x7b"a":%d}' 1; curl -s -d "$b" ` + U, want: "json", live: true},
		{name: "printf in a substitution", cmd: `b=$(printf '\x7b"a":1}'); curl -s --json "$b" ` + U, want: "json", live: true},
		{name: "xxd -r -p", cmd: `echo 7b2261223a317d | xxd -r -p | curl -s -d @- ` + U, want: "json", live: true},
		{name: "base64 -d", cmd: `echo eyJhIjoxfQ== | base64 -d | curl -s -d @- ` + U, want: "json", live: true},
		{name: "base64 round trip", cmd: `echo '{"a":1}' | base64 | base64 -d | curl -s -d @- ` + U, want: "json", live: true},
		{name: "ansi-c quoting", cmd: `curl -s -d $'\x7b"a":1}' ` + U, want: "json", live: true},
		{name: "${x@E}", cmd: `x='\x7b"a":1}'; curl -s -d "${x@E}" ` + U, want: "json", live: true},
		{name: "bash's echo without -e keeps backslashes", cmd: `echo '\x7b"a":1}' | curl -s -d @- ` + U, want: "allow", live: true},
		{name: "printf %s keeps backslashes", cmd: `printf '%s' '\x7b"a":1}' | curl -s -d @- ` + U, want: "allow", live: true},
	},
	// Indirection: functions, set --, aliases, hash, computed names.
	"indirection": {
		{name: "function forwarding $@", cmd: `f(){ "$@"; }; f curl -s -d '{"a":1}' ` + U, want: "json", live: true},
		{name: "set -- then $@", cmd: `set -- curl -s -d '{"a":1}' ` + U + `; "$@"`, want: "json", live: true},
		{name: "alias on the next line", cmd: "shopt -s expand_aliases; alias post='curl -s -d'\npost '{\"a\":1}' " + U, want: "json", live: true},
		{name: "hash -p", cmd: `hash -p /usr/bin/curl post; post -s -d '{"a":1}' ` + U, want: "json", live: true},
		{name: "$(which curl)", cmd: `"$(which curl)" -s -d '{"a":1}' ` + U, want: "json", live: true},
		{name: "command -v in a variable", cmd: `p=$(command -v curl); "$p" -s -d '{"a":1}' ` + U, want: "json", live: true},
		{name: "/proc/self/exe -c", cmd: `/proc/self/exe -c 'curl -s -d "{\"a\":1}" ` + U + `'`, want: "json", live: true},
		{name: "$BASH -c", cmd: `"$BASH" -c 'curl -s -d "{\"a\":1}" ` + U + `'`, want: "json", live: true},
		{name: "${x@P} runs substitutions", cmd: `x='$(curl -s -d "{\"a\":1}" ` + U + `)'; : "${x@P}"`, want: "json", live: true},
		{name: "arithmetic subscript injection", cmd: `x='a[$(curl -s -d "{\"a\":1}" ` + U + `)]'; : $((x))`, want: "json", live: true},
		{name: "subscript injection through [[ -eq ]]", cmd: `x='a[$(curl -s -d "{\"a\":1}" ` + U + `)]'; [[ $x -eq 0 ]]`, want: "json", live: true},
		{name: "trap EXIT", cmd: `trap 'curl -s -d "{\"a\":1}" ` + U + `' EXIT`, want: "json", live: true},
		{name: "command_not_found_handle", cmd: `command_not_found_handle(){ curl -s -d "$2" ` + U + `; }; no-such-program-x '{"a":1}'`, want: "json", live: true},
		{name: "exported function in a child shell", cmd: `g(){ curl -s -d "$1" ` + U + `; }; export -f g; bash -c 'g "{\"a\":1}"'`, want: "json", live: true},
		{name: "program in a variable", cmd: `C=curl; $C -s -d '{"a":1}' ` + U, want: "json", live: true},
		{name: "$_ holds the last argument", cmd: `echo '{"a":1}' >/dev/null; curl -s -d "$_" ` + U, want: "json", live: true},
		{name: "eval of printf's output", cmd: `eval "$(printf 'curl -s -d %s %s' "'{\"a\":1}'" ` + U + `)"`, want: "json", live: true},
		{name: "eval of a variable the command set", cmd: `v='curl -s -d {\"a\":1} ` + U + `'; eval "$v"`, want: "json", live: true},
		{name: "program name from a file", cmd: `"$(cat prog.txt)" -s -d '{"a":1}' ` + U, want: "unknown"},
		{name: "eval of a file", cmd: `eval "$(cat cmd.txt)"`, want: "unknown"},
		{name: "program name made by tr from text that could be JSON", cmd: `"$(echo '{"a":1}' | tr -d '{}')" x`, want: "unknown"},
		{name: "computed name without JSON", cmd: `"$(which jq)" --version`, want: "allow", live: true},
		{name: "computed compiler", cmd: `$CC -o main main.c`, want: "allow"},
		{name: "computed interpreter with its own code", cmd: `"$PYTHON" -c 'import json; print(json.dumps({"a": 1}))'`, want: "allow"},
	},
	// A shell reading its program from somewhere else.
	"shell input": {
		{name: "bash /dev/stdin here-string", cmd: `bash /dev/stdin <<< 'curl -s -d "{\"a\":1}" ` + U + `'`, want: "json", live: true},
		{name: "bash <(…)", cmd: `bash <(echo 'curl -s -d "{\"a\":1}" ` + U + `')`, want: "json", live: true},
		{name: "xargs bash -c", cmd: `echo '{"a":1}' | xargs -0 bash -c 'curl -s -d "$1" ` + U + `' _`, want: "json", live: true},
		{name: "sh -c with a positional argument", cmd: `sh -c 'curl -s -d "$1" ` + U + `' sh '{"a":1}'`, want: "json", live: true},
		{name: "sh -c with $0", cmd: `sh -c 'curl -s -d "$0" ` + U + `' '{"a":1}'`, want: "json", live: true},
		{name: "find -exec sh -c", cmd: `find . -maxdepth 0 -exec sh -c 'curl -s -d "$1" ` + U + `' sh '{"a":1}' \;`, want: "json", live: true},
		{name: "env -S", cmd: `env -S'curl -s -d {\"a\":1} ` + U + `'`, want: "json", live: true},
		{name: "env -S in a cluster", cmd: `env -vS'curl -s -d {\"a\":1} ` + U + `'`, want: "json", live: true},
		{name: "env -S quotes strip", cmd: `env -S'curl -s -d {"a":1} ` + U + `'`, want: "allow", live: true},
		{name: "source <(…)", cmd: `source <(echo 'curl -s -d "{\"a\":1}" ` + U + `')`, want: "json", live: true},
		{name: ". /dev/stdin heredoc", cmd: ". /dev/stdin <<'EOF'\ncurl -s -d '{\"a\":1}' " + U + "\nEOF", want: "json", live: true},
		{name: "bash -s here-string", cmd: `bash -s <<< 'curl -s -d "{\"a\":1}" ` + U + `'`, want: "json", live: true},
		{name: "heredoc piped into sh", cmd: "cat <<'EOF' | sh\ncurl -s -d '{\"a\":1}' " + U + "\nEOF", want: "json", live: true},
		{name: "script the command wrote", cmd: `printf '%s\n' "curl -s -d '{\"a\":1}' ` + U + `" > s.sh; bash s.sh`, want: "json", live: true},
		{name: "script from the network", cmd: `curl -s ` + U + ` | bash`, want: "unknown"},
		{name: "script from a substitution of a file", cmd: `bash -c "$(cat s.sh)"`, want: "unknown"},
		{name: "xargs -I into sh -c loses the quotes", cmd: `xargs -I{} sh -c 'curl -s -d "{}" ` + U + `' <<< '{"a":1}'`, want: "allow", live: true},
		{name: "known script without JSON", cmd: `echo 'curl -s ` + U + `' | bash`, want: "allow", live: true},
		{name: "script file on disk", cmd: `bash ./run.sh`, want: "allow"},
	},
	// Data arriving through standard-input redirections and pipes.
	"stdin": {
		{name: "group with a here-string", cmd: `{ curl -s -d @- ` + U + `; } <<< '{"a":1}'`, want: "json", live: true},
		{name: "while read", cmd: `while read -r l; do curl -s -d "$l" ` + U + `; done <<< '{"a":1}'`, want: "json", live: true},
		{name: "while read, second line", cmd: "while read -r l; do curl -s -d \"$l\" " + U + "; done <<'EOF'\nx=1\n{\"a\":1}\nEOF", want: "json", live: true},
		{name: "exec < <(…)", cmd: `exec < <(echo '{"a":1}'); curl -s -d @- ` + U, want: "json", live: true},
		{name: "jq -n builds JSON", cmd: `jq -n '{a:1}' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "subshell with a heredoc", cmd: "(curl -s --data-binary @- " + U + ") <<'EOF'\n{\"a\":1}\nEOF", want: "json", live: true},
		{name: "function fed a here-string", cmd: `post(){ curl -s -d @- ` + U + `; }; post <<< '{"a":1}'`, want: "json", live: true},
		{name: "mapfile", cmd: `mapfile -t L <<< '{"a":1}'; curl -s -d "${L[0]}" ` + U, want: "json", live: true},
		{name: "read -a", cmd: `read -ra W <<< '{"a":1} x'; curl -s -d "${W[0]}" ` + U, want: "json", live: true},
		{name: "curl -T - uploads stdin", cmd: `curl -s -T - ` + U + ` <<< '{"a":1}'`, want: "json", live: true},
		{name: "exec 3<<<", cmd: `exec 3<<<'{"a":1}'; curl -s -d @/dev/fd/3 ` + U, want: "json", live: true},
		{name: "read in a piped group", cmd: `echo '{"a":1}' | { read -r b; curl -s --json "$b" ` + U + `; }`, want: "json", live: true},
		{name: "heredoc through cat", cmd: "cat <<EOF | curl -s -d @- " + U + "\n{\"a\":1}\nEOF", want: "json", live: true},
		{name: "< <(printf …)", cmd: `curl -s -d @- ` + U + ` < <(printf '{"a":%d}' 1)`, want: "json", live: true},
		{name: "tee >(curl)", cmd: `echo '{"a":1}' | tee >(curl -s -d @- ` + U + `) >/dev/null`, want: "json", live: true},
		{name: "@/proc/self/fd/0", cmd: `curl -s -d @/proc/self/fd/0 ` + U + ` <<< '{"a":1}'`, want: "json", live: true},
		{name: "$(</dev/stdin) in a piped group", cmd: `echo '{"a":1}' | { curl -s -d "$(</dev/stdin)" ` + U + `; }`, want: "json", live: true},
		{name: "$(…) reads the shell's input, not the command's", cmd: `curl -s -d "$(</dev/stdin)" ` + U + ` <<< '{"a":1}'`, want: "allow", live: true},
		{name: "$(< <(…))", cmd: `curl -s -d "$(< <(echo '{"a":1}'))" ` + U, want: "json", live: true},
		{name: "jq -rn of a string", cmd: `jq -rn '"{\"a\":1}"' | curl -s -d @- ` + U, want: "json", live: true},
		{name: "jq passes JSON through", cmd: `echo '{"a":{"b":1}}' | jq -c .a | curl -s -d @- ` + U, want: "json", live: true},
		{name: "sed over JSON", cmd: `echo '{"a":1}' | sed 's/1/2/' | curl -s -d @- ` + U, want: "unknown", live: true},
		{name: "jq -n of a string", cmd: `jq -n --arg v x '$v' | curl -s -d @- ` + U, want: "allow", live: true},
		{name: "jq of a file", cmd: `jq -c . body.json | curl -s -d @- ` + U, want: "allow", live: true, sink: "json", note: "the JSON comes from a file on disk: the allowed form"},
		{name: "jq extracts a number", cmd: `echo '{"a":1}' | jq -r .a | curl -s -d @- ` + U, want: "allow", live: true},
		{name: "curl ignores a pipe without @-", cmd: `echo '{"a":1}' | curl -s ` + U, want: "allow", live: true},
	},
	// JSON inside other encodings of the body.
	"encodings": {
		{name: "form field", cmd: `curl -s -d 'a=1&j={"a":1}' ` + U, want: "json", live: true},
		{name: "-F quoted value", cmd: `curl -s -F 'm="{\"a\":1}"' ` + U, want: "json", live: true},
		{name: "-F with a type", cmd: `curl -s -F 'meta={"a":1};type=application/json' ` + U, want: "json", live: true},
		{name: "--form-string", cmd: `curl -s --form-string 'm={"a":1}' ` + U, want: "json", live: true},
		{name: "wget --execute post_data", cmd: `wget -q -O- --execute='post_data={"a":1}' ` + U, want: "json", live: true},
		{name: "wget -e with spaces", cmd: `wget -q -O- -e 'post_data = {"a":1}' ` + U, want: "json", live: true},
		{name: "wget -e attached, other spelling", cmd: `wget -q -O- -epostdata='{"a":1}' ` + U, want: "json", live: true},
		{name: "URL query with -g", cmd: `curl -sg '` + U + `?q={"a":1}'`, want: "json", live: true},
		{name: "URL query, curl globbing", cmd: `curl -s '` + U + `?q={"a":1}'`, want: "json", live: true, sink: "none",
			note: "without -g curl reads {…} as a URL glob and sends q=\"a\":1; the command still writes JSON inline, and the agent meant to send it"},
		{name: "URL query percent-encoded", cmd: `curl -s '` + U + `?q=%7B%22a%22%3A1%7D'`, want: "json", live: true},
		{name: "--url", cmd: `curl -s --url '` + U + `?q=%7B%22a%22:1%7D'`, want: "json", live: true},
		{name: "wget URL query", cmd: `wget -q -O- '` + U + `?x=1&q={"a":1}'`, want: "json", live: true},
		{name: "--data-urlencode", cmd: `curl -s --data-urlencode 'j={"a":1}' ` + U, want: "json", live: true},
		{name: "-G -d", cmd: `curl -s -G -d 'j={"a":1}' ` + U, want: "json", live: true},
		{name: "form field percent-encoded", cmd: `curl -s -d 'j=%7B%22a%22%3A1%7D' ` + U, want: "json", live: true},
		{name: "httpie query item", cmd: `http POST :3000/x q=='{"a":1}'`, want: "json"},
		{name: "plain form", cmd: `curl -s -d 'a=1&b=2' ` + U, want: "allow", live: true},
	},
	// JSON the command assembles or hands on where the guard cannot see it
	// exactly (issue 28): values built by loops, read with IFS or a
	// count, start-up files and trace hooks, shell code git, awk and sed
	// run, text a filter cuts.
	"hidden": {
		{name: "for loop assembles the body", cmd: `b='{'; for p in '"a"' ':1'; do b="$b$p"; done; b="$b}"; curl -s -d "$b" ` + U, want: "json", live: true},
		{name: "long for loop assembles the body", cmd: `b=; for p in '{' '"a"' : 1 '}' w x y z v; do case $p in [vwxyz]) ;; *) b="$b$p";; esac; done; curl -s -d "$b" ` + U, want: "unknown", live: true},
		{name: "while loop assembles the body", cmd: "b=; while read -r p; do b=\"$b$p\"; done <<'EOF'\n{\n\"a\":1\n}\nEOF\ncurl -s -d \"$b\" " + U, want: "unknown", live: true},
		{name: "read with IFS", cmd: `IFS='|' read -r a b <<< 'x|{"a":1}'; curl -s -d "$b" ` + U, want: "unknown", live: true},
		{name: "IFS set before read", cmd: `IFS=,; read -r a b <<< '{"a":1},x'; curl -s --json "$a" ` + U, want: "json", live: true},
		{name: "read -n", cmd: `read -n 7 j <<< '{"a":1}xyz'; curl -s -d "$j" ` + U, want: "json", live: true},
		{name: "mapfile -s", cmd: `mapfile -s 1 -t L <<< $'x\n{"a":1}'; curl -s -d "${L[0]}" ` + U, want: "json", live: true},
		{name: "head -c cuts it out", cmd: `x=$(echo '{"a":1}xyz' | head -c 7); curl -s -d "$x" ` + U, want: "unknown", live: true},
		{name: "--rcfile <(…)", cmd: `bash --rcfile <(echo 'curl -s -d "{\"a\":1}" ` + U + `') -i -c true 2>/dev/null`, want: "json", live: true},
		{name: "BASH_ENV the command wrote", cmd: `printf '%s\n' "curl -s -d '{\"a\":1}' ` + U + `" > rc1.sh; BASH_ENV=./rc1.sh bash -c true`, want: "json", live: true},
		{name: "ENV of an interactive sh", cmd: `printf '%s\n' "curl -s -d '{\"a\":1}' ` + U + `" > rc2.sh; ENV=./rc2.sh sh -i -c true 2>/dev/null`, want: "json", live: true},
		{name: "start-up file named at run time", cmd: `printf '%s\n' "curl -s -d '{\"a\":1}' ` + U + `" > "$HOME/rc3.sh"; BASH_ENV="$HOME/rc3.sh" bash -c true`, want: "unknown", live: true},
		{name: "printf %q piped into bash", cmd: `printf '%q ' curl -s -d '{"a":1}' ` + U + ` | bash`, want: "unknown", live: true},
		{name: "PS4 under set -x", cmd: `PS4='$(curl -s -d "{\"a\":1}" ` + U + `)'; set -x; true 2>/dev/null`, want: "json", live: true},
		{name: "DEBUG trap", cmd: `trap 'curl -s -d "{\"a\":1}" ` + U + `' DEBUG; true`, want: "json", live: true},
		{name: "git -c alias", cmd: `git -c alias.x='!curl -s -d "{\"a\":1}" ` + U + `' x`, want: "json", live: true},
		{name: "GIT_SSH_COMMAND", cmd: `GIT_SSH_COMMAND='curl -s -d "{\"a\":1}" ` + U + `' git ls-remote ssh://h/x 2>/dev/null`, want: "json", live: true},
		{name: "awk system()", cmd: `awk $'BEGIN { system("curl -s -d \'{\\"a\\":1}\' ` + U + `") }'`, want: "unknown", live: true},
		{name: "sed e", cmd: `echo x | sed "e curl -s -d '{\"a\":1}' ` + U + `"`, want: "json", live: true},
		{name: "exported function through env", cmd: `env 'BASH_FUNC_post%%=() { curl -s -d "$1" ` + U + `; }' bash -c 'post "{\"a\":1}"'`, want: "json", live: true},
		{name: "a slice of a value outside ASCII", cmd: `x='é{"a":1}'; curl -s -d "${x:2}" ` + U, want: "unknown", live: true},
		{name: "BASH_REMATCH", cmd: `[[ '{"a":1}' =~ (.*) ]]; curl -s -d "${BASH_REMATCH[1]}" ` + U, want: "json", live: true},
		{name: "awk -W exec of a <(…)", cmd: `awk -W exec <(echo 'BEGIN{system("curl -s -d {\\\"a\\\":1} ` + U + `")}')`, want: "unknown", live: true},
		{name: "env with an option of optional value", cmd: `env --ignore-signal curl -s -d '{"a":1}' ` + U, want: "json", live: true},
		{name: "a connection on a descriptor exec opened", cmd: `exec 3<>` + TCP + `; ` + post + ` >&3; cat <&3 >/dev/null`, want: "json", live: true},
		{name: "a connection on a {var} descriptor", cmd: `exec {fd}<>` + TCP + `; ` + post + ` >&$fd; cat <&$fd >/dev/null`, want: "json", live: true},
		{name: "a connection a group's redirection opened", cmd: `{ ` + post + ` >&3; cat <&3 >/dev/null; } 3<>` + TCP, want: "json", live: true},
		{name: "a request without JSON on a descriptor", cmd: `exec 3<>` + TCP + `; printf 'GET /p HTTP/1.0\r\n\r\n' >&3; cat <&3 >/dev/null`, want: "allow", live: true},
		{name: "what the shell writes to a coprocess", cmd: `coproc curl -s -d @- ` + U + `; echo '{"a":1}' >&${COPROC[1]}; exec {COPROC[1]}>&-; wait`, want: "unknown", live: true},
		{name: "git config prints a value given with -c", cmd: `x=$(git -c x.y='{"a":1}' config x.y); curl -s -d "$x" ` + U, want: "unknown", live: true},
		{name: "realpath prints a path given", cmd: `x=$(realpath -m --relative-to=/ '/{"a":1}'); curl -s -d "$x" ` + U, want: "unknown", live: true},
		{name: "a signal trap assigns JSON", cmd: `trap 'x={\"a\":1}' USR1; x=y; kill -USR1 $$; curl -s -d "$x" ` + U, want: "unknown", live: true},
		{name: "a signal trap assigns a new name", cmd: `trap 'y={\"a\":1}' USR1; kill -USR1 $$; curl -s -d "$y" ` + U, want: "unknown", live: true},
		{name: "a signal trap assigns no JSON", cmd: `trap 'x=1' USR1; x=y; kill -USR1 $$; curl -s -d "a=$x" ` + U, want: "allow", live: true},
		{name: "an abbreviated wget option", cmd: `wget -q -O- --post-d='{"a":1}' ` + U, want: "json", live: true},
		{name: "env prints what the command set", cmd: `X='{"a":1}' env | grep ^X= | cut -d= -f2- | curl -s -d @- ` + U, want: "unknown", live: true},
		{name: "printenv prints what the command set", cmd: `curl -s -d "$(X='{"a":1}' printenv X)" ` + U, want: "unknown", live: true},
		{name: "a program reads a <(…) it is given", cmd: `curl -s -d "$(join <(echo '{"a":1}') <(echo '{"a":1}'))" ` + U, want: "unknown", live: true},
		{name: "awk makes a brace from its number", cmd: `curl -s -d "$(awk 'BEGIN{printf "%c\"a\":1}", 123}')" ` + U, want: "unknown", live: true},
		{name: "sed puts braces around text", cmd: `curl -s -d "$(echo '"a":1' | sed 's/.*/{&}/')" ` + U, want: "unknown", live: true},
		{name: "awk prints a field", cmd: `curl -s -d "id=$(echo 'a b' | awk '{print $1}')" ` + U, want: "allow", live: true},
		{name: "jq -n builds from its arguments", cmd: `curl -s -d "$(jq -nc --argjson a 1 '$ARGS.named')" ` + U, want: "unknown", live: true},
		{name: "a descriptor onto a >(…) of a group", cmd: `{ echo '{"a":1}' >&3; } 3> >(curl -s -d @- ` + U + `); sleep 1`, want: "json", live: true},
		{name: "a descriptor onto a >(…) exec opened", cmd: `exec 3> >(curl -s -d @- ` + U + `); echo '{"a":1}' >&3; exec 3>&-; sleep 1`, want: "json", live: true},
		{name: "a fifo the command writes", cmd: `mkfifo p; curl -s -d @p ` + U + ` & echo '{"a":1}' > p; wait`, want: "allow", live: true, sink: "json", note: "the JSON goes through a file the command wrote (a fifo here): the form the guard asks for"},
		{name: "loop over files sends nothing inline", cmd: `for f in *.json; do curl -s -d @"$f" ` + U + `; done`, want: "allow", live: true, sink: "json", note: "the JSON comes from the files on disk: the allowed form"},
	},
	// False blocks the red team found, and their neighbours: allowed.
	"allowed": {
		{name: "-w format", cmd: `curl -s -o /dev/null -w '{"code":%{http_code}}' ` + U, want: "allow", live: true},
		{name: "--write-out format", cmd: `curl -s -o /dev/null --write-out '{"code":%{http_code}}' ` + U, want: "allow", live: true},
		{name: "jq -r .name into xargs", cmd: `echo '{"name":"x"}' | jq -r .name | xargs -I{} curl -s ` + U + `/{}`, want: "allow", live: true},
		{name: "sha256sum into xargs", cmd: `printf '{"a":1}' | sha256sum | cut -d' ' -f1 | xargs -I{} curl -s ` + U + `/{}`, want: "allow", live: true},
		{name: "the allowed form", cmd: `echo '{"k":"v"}' > /tmp/x.json && curl -s -d @/tmp/x.json ` + U, want: "allow", live: true, sink: "json", note: "the JSON goes through a file: the form the guard asks for"},
		{name: "response filtered by jq", cmd: `curl -s ` + U + ` | jq '.[0] | {id: .id}'`, want: "allow", live: true},
		{name: "jq -S into a file", cmd: `echo '{"a":1}' | jq -S . > sorted.json && curl -s --json @sorted.json ` + U, want: "allow", live: true, sink: "json", note: "the JSON goes through a file"},
		{name: "-w %{json}", cmd: `curl -s -o /dev/null -w '%{json}' ` + U, want: "allow", live: true},
		{name: "variable a child shell does not see", cmd: `X='{"a":1}'; bash -c 'curl -s -d "$X" ` + U + `'`, want: "allow", live: true},
		{name: "exported variable a child shell sees", cmd: `export X='{"a":1}'; bash -c 'curl -s -d "$X" ` + U + `'`, want: "json", live: true},
		{name: "jq extraction in a substitution", cmd: `curl -s -d "$(jq -r .name <<< '{"name":"x"}')" ` + U, want: "allow", live: true},
		{name: "jq -n into a file", cmd: `jq -n '{a:1}' > b2.json; curl -s -d @b2.json ` + U, want: "allow", live: true, sink: "json", note: "the JSON goes through a file"},
		{name: "token from a response", cmd: `t=$(curl -s ` + U + ` | jq -r .token); curl -s -H "Authorization: Bearer $t" ` + U, want: "allow", live: true},
		{name: "awk braces", cmd: `awk '{print $1}' /dev/null`, want: "allow"},
		{name: "watch's sh -c strips the quotes", cmd: `watch -n 5 curl -d '{"a":1}' ` + U, want: "allow"},
		{name: "watch with escaped quotes", cmd: `watch -n 5 curl -d '{\"a\":1}' ` + U, want: "json"},
		{name: "heredoc into a file", cmd: "cat > notes.md <<'EOF'\nRun: curl -d '{\"a\":1}' " + U + "\nEOF", want: "allow", live: true},
	},
}

func TestFamilies(t *testing.T) {
	t.Parallel()
	kinds := map[string]error{"json": ErrInlineJSON, "unknown": ErrUnknowable, "parse": ErrUnparsable, "complex": ErrTooComplex}
	for family, cases := range families {
		written := 0
		for _, tc := range cases {
			if tc.want != "allow" {
				written++
			}
		}
		if family != "allowed" && written < 10 {
			t.Errorf("family %s has %d refused commands, want at least 10", family, written)
		}
		if family == "allowed" && len(cases) < 10 {
			t.Errorf("family allowed has %d commands, want at least 10", len(cases))
		}
		for _, tc := range cases {
			t.Run(family+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				if tc.sink != "" && tc.note == "" {
					t.Fatal("a sink override needs a note saying why")
				}
				err := Check(tc.cmd)
				if tc.want == "allow" {
					if err != nil {
						t.Fatalf("Check(%q) refused an allowed command: %v", tc.cmd, err)
					}
					return
				}
				var ge *Error
				if !errors.As(err, &ge) || !errors.Is(err, kinds[tc.want]) {
					t.Fatalf("Check(%q) = %v, want %s", tc.cmd, err, tc.want)
				}
				msg := err.Error()
				switch tc.want {
				case "json":
					if err := Check(ge.Allowed); err != nil {
						t.Errorf("the allowed form %q is itself refused: %v", ge.Allowed, err)
					}
					if !strings.Contains(msg, "Allowed form:") || !strings.Contains(ge.Allowed, FileHint) {
						t.Errorf("message does not show the allowed form: %s", msg)
					}
				case "unknown":
					if ge.Instead == "" || !strings.Contains(msg, "Instead: ") {
						t.Errorf("message does not say what to write instead: %s", msg)
					}
				}
			})
		}
	}
}
