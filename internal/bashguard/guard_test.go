package bashguard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/fault"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	const J = `{"name":"todo","done":false}`
	cases := []struct {
		name string
		cmd  string
		// block is "" for an allowed command, else the sentinel's name:
		// json, parse, long, complex.
		block string
		// prog and via are expected in an inline-JSON rejection.
		prog, via string
		// allowed is expected in the suggested command.
		allowed string
	}{
		// Blocked: curl flags and forms.
		{name: "curl -d", cmd: `curl -X POST -H 'Content-Type: application/json' -d '` + J + `' http://localhost:3000/todos`, block: "json", prog: "curl", via: "-d",
			allowed: `echo '` + J + `' > "$TMPDIR/x.json" && curl -X POST -H 'Content-Type: application/json' -d @"$TMPDIR/x.json" http://localhost:3000/todos`},
		{name: "curl --data", cmd: `curl --data '{"a":1}' http://x`, block: "json", prog: "curl", via: "--data", allowed: `curl --data @"$TMPDIR/x.json" http://x`},
		{name: "curl --data-raw", cmd: `curl --data-raw '{"a":1}' http://x`, block: "json", via: "--data-raw", allowed: `curl --data-binary @"$TMPDIR/x.json" http://x`},
		{name: "curl --data-binary", cmd: `curl --data-binary '[{"a":1}]' http://x`, block: "json", via: "--data-binary"},
		{name: "curl --data-urlencode", cmd: `curl --data-urlencode 'q={"a":1}' http://x`, block: "json", via: "--data-urlencode", allowed: `--data-urlencode q@"$TMPDIR/x.json"`},
		{name: "curl --json", cmd: `curl --json '{"a":1}' http://x`, block: "json", via: "--json", allowed: `curl --json @"$TMPDIR/x.json" http://x`},
		{name: "curl -F", cmd: `curl -F 'meta={"a":1};type=application/json' http://x`, block: "json", via: "-F", allowed: `'meta=<'"$TMPDIR/x.json"';type=application/json'`},
		{name: "curl array", cmd: `curl -d '[1, 2, 3]' http://x`, block: "json", via: "-d"},
		{name: "curl truncated object", cmd: `curl -d '{"a": 1' http://x`, block: "json"},
		{name: "curl attached -d", cmd: `curl -d'{"a":1}' http://x`, block: "json", allowed: `curl -d@"$TMPDIR/x.json" http://x`},
		{name: "curl cluster -sSd", cmd: `curl -sSd '{"a":1}' http://x`, block: "json", allowed: `curl -sSd @"$TMPDIR/x.json" http://x`},
		{name: "curl cluster attached", cmd: `curl -sSd'{"a":1}' http://x`, block: "json", allowed: `curl -sSd@"$TMPDIR/x.json" http://x`},
		{name: "curl -XPOST then -d", cmd: `curl -XPOST -d '{"a":1}' http://x`, block: "json"},
		{name: "curl form field json", cmd: `curl -d 'payload={"a":1}' http://x`, block: "json"},
		{name: "ansi-c quoting", cmd: `curl -d $'{"a":\x31}' http://x`, block: "json"},
		{name: "double quotes escaped", cmd: `curl -d "{\"a\":1}" http://x`, block: "json"},
		{name: "unquoted escaped", cmd: `curl -d {\"a\":1} http://x`, block: "json"},
		{name: "variable earlier", cmd: `B='{"a":1}'; curl -d "$B" http://x`, block: "json"},
		{name: "exported variable", cmd: `export B='{"a":1}' && curl -d "${B}" http://x`, block: "json"},
		{name: "variable from heredoc subst", cmd: "B=$(cat <<'EOF'\n{\"a\":1}\nEOF\n)\ncurl -d \"$B\" http://x", block: "json"},
		{name: "echo subst", cmd: `curl -d "$(echo '{"a":1}')" http://x`, block: "json"},
		{name: "printf subst", cmd: `curl -d "$(printf '%s' '{"a":1}')" http://x`, block: "json"},
		{name: "for loop var", cmd: `for b in '{"a":1}'; do curl -d "$b" http://x; done`, block: "json"},
		{name: "nameref", cmd: `x='{"a":1}'; declare -n r=x; curl -d "$r" http://x`, block: "json"},
		{name: "local nameref in a function", cmd: `x='{"a":1}'; f() { local -n r=x; curl -d "$r" http://x; }; f`, block: "json"},
		{name: "array element", cmd: `B=(x '{"a":1}'); curl -d "${B[1]}" http://x`, block: "json"},
		{name: "declared array, all elements", cmd: `declare -a B=(x '{"a":1}'); curl -d "${B[@]}" http://x`, block: "json"},
		{name: "array append", cmd: `B=(x); B+=('{"a":1}'); curl -d "${B[1]}" http://x`, block: "json"},
		{name: "array element assigned", cmd: `B=(x); B[3]='{"a":1}'; curl -d "${B[3]}" http://x`, block: "json"},
		{name: "array element at a computed index", cmd: `i=2; B[i+1]='{"a":1}'; curl -d "${B[$((i+1))]}" http://x`, block: "json"},
		{name: "array literal with indexes", cmd: `B=([2]='{"a":1}' [0]=x); curl -d "${B[2]}" http://x`, block: "json"},
		{name: "associative array", cmd: `declare -A B=([body]='{"a":1}'); curl -d "${B[body]}" http://x`, block: "json"},
		{name: "empty array element before a client", cmd: `B[0]=; curl -d '{"a":1}' http://x`, block: "json"},
		{name: "array index beyond what the guard follows", cmd: `B[99999999]='{"a":1}'; curl -d "${B[99999999]}" http://x`, block: "complex"},
		// Blocked: other clients.
		{name: "wget --post-data=", cmd: `wget --post-data='{"a":1}' http://x`, block: "json", prog: "wget", allowed: `wget --post-file="$TMPDIR/x.json" http://x`},
		{name: "wget --body-data", cmd: `wget --method=PUT --body-data '{"a":1}' http://x`, block: "json", allowed: `--body-file "$TMPDIR/x.json"`},
		{name: "httpie :=", cmd: `http POST :3000/todos tags:='["a","b"]'`, block: "json", prog: "http", allowed: `tags:=@"$TMPDIR/x.json"`},
		{name: "httpie here-string", cmd: `http POST :3000/todos <<< '{"a":1}'`, block: "json", via: "a here-string", allowed: `http POST :3000/todos < "$TMPDIR/x.json"`},
		{name: "xh raw", cmd: `xh --raw '{"a":1}' POST :3000/x`, block: "json", prog: "xh"},
		{name: "grpcurl -d", cmd: `grpcurl -plaintext -d '{"id":1}' localhost:50051 svc/Get`, block: "json", prog: "grpcurl", allowed: `grpcurl -plaintext -d @ localhost:50051 svc/Get < "$TMPDIR/x.json"`},
		{name: "gh api here-string", cmd: `gh api repos/o/r/issues --input - <<< '{"title":"t"}'`, block: "json", prog: "gh", allowed: `--input "$TMPDIR/x.json"`},
		{name: "gh api -f json", cmd: `gh api repos/o/r -f 'labels=["bug"]'`, block: "json"},
		{name: "curl heredoc", cmd: "curl -d @- http://x <<EOF\n{\"a\":1}\nEOF", block: "json", via: "a heredoc", allowed: `curl -d @"$TMPDIR/x.json" http://x`},
		// Blocked: pipes into a client's stdin.
		{name: "echo pipe", cmd: `echo '{"a":1}' | curl -d @- http://x`, block: "json", via: "a pipe from echo", allowed: `echo '{"a":1}' > "$TMPDIR/x.json" && curl -d @"$TMPDIR/x.json" http://x`},
		{name: "printf pipe", cmd: `printf '{"a":%d}' 1 | curl --json @- http://x`, block: "json"},
		{name: "jq -n pipe", cmd: `jq -n '{"a":1}' | curl -d @- http://x`, block: "json", allowed: `jq -n '{"a":1}' > "$TMPDIR/x.json" && curl -d @"$TMPDIR/x.json" http://x`},
		{name: "heredoc through cat pipe", cmd: "cat <<EOF | http POST :3000/x\n{\"a\":1}\nEOF", block: "json"},
		{name: "echo pipe xargs", cmd: `echo '{"a":1}' | xargs -0 -I{} curl -d {} http://x`, block: "json"},
		// Blocked: nesting.
		{name: "after &&", cmd: `cd /app && curl -d '{"a":1}' http://x`, block: "json"},
		{name: "after ;", cmd: `true; curl -d '{"a":1}' http://x`, block: "json"},
		{name: "in pipeline", cmd: `curl -s -d '{"a":1}' http://x | jq .`, block: "json"},
		{name: "in subshell", cmd: `(cd /app; curl -d '{"a":1}' http://x)`, block: "json"},
		{name: "in command substitution", cmd: `R=$(curl -d '{"a":1}' http://x); echo "$R"`, block: "json"},
		{name: "in backticks", cmd: "echo `curl -d '{\"a\":1}' http://x`", block: "json"},
		{name: "in if", cmd: `if true; then curl -d '{"a":1}' http://x; fi`, block: "json"},
		{name: "in for", cmd: `for i in 1 2; do curl -d '{"a":1}' http://x; done`, block: "json"},
		{name: "in while", cmd: `while false; do curl -d '{"a":1}' http://x; done`, block: "json"},
		{name: "bash -c", cmd: `bash -c "curl -d '{\"a\":1}' http://x"`, block: "json"},
		{name: "sh -c nested", cmd: `sh -c "bash -c \"curl -d '{\\\"a\\\":1}' http://x\""`, block: "json"},
		{name: "bash -lc", cmd: `bash -lc 'curl --json "{\"a\":1}" http://x'`, block: "json"},
		{name: "eval", cmd: `eval "curl -d '{\"a\":1}' http://x"`, block: "json"},
		{name: "script piped to bash", cmd: `echo "curl -d '{\"a\":1}' http://x" | bash`, block: "json"},
		{name: "script heredoc to sh", cmd: "sh <<'EOF'\ncurl -d '{\"a\":1}' http://x\nEOF", block: "json"},
		{name: "env -S", cmd: `env -S "curl -d '{\"a\":1}' http://x"`, block: "json"},
		// Blocked: wrappers and disguised names.
		{name: "timeout", cmd: `timeout -s KILL 10 curl -d '{"a":1}' http://x`, block: "json", allowed: `echo '{"a":1}' > "$TMPDIR/x.json" && timeout -s KILL 10 curl -d @"$TMPDIR/x.json" http://x`},
		{name: "env assignments", cmd: `env -i NO_PROXY=* curl -d '{"a":1}' http://x`, block: "json"},
		{name: "nice nohup", cmd: `nice -n 5 nohup curl -d '{"a":1}' http://x`, block: "json"},
		{name: "command", cmd: `command curl -d '{"a":1}' http://x`, block: "json"},
		{name: "sudo", cmd: `sudo -u app curl -d '{"a":1}' http://x`, block: "json"},
		{name: "xargs", cmd: `seq 3 | xargs -n1 curl -d '{"a":1}' http://x`, block: "json"},
		{name: "absolute path", cmd: `/usr/bin/curl -d '{"a":1}' http://x`, block: "json"},
		{name: "backslash name", cmd: `\curl -d '{"a":1}' http://x`, block: "json"},
		{name: "split quotes name", cmd: `c""url -d '{"a":1}' http://x`, block: "json"},
		{name: "variable name", cmd: `C=curl; $C -d '{"a":1}' http://x`, block: "json"},
		// Blocked: process substitutions, sourced scripts, builtins that set
		// variables, functions, aliases, and runners the guard does not list.
		{name: "proc subst as data file", cmd: `curl -d @<(echo '{"a":1}') http://x`, block: "json", via: "a process substitution", allowed: `&& curl -d @"$TMPDIR/x.json" http://x`},
		{name: "default value in double quotes", cmd: `curl -d "${B:-{\"a\":1\}}" http://x`, block: "json"},
		{name: "jq -nc subst", cmd: `curl -d "$(jq -nc '{"a":1}')" http://x`, block: "json"},
		{name: "proc subst as stdin", cmd: `curl -d @- http://x < <(printf '{"a":%d}' 1)`, block: "json"},
		{name: "proc subst output to client", cmd: `echo '{"a":1}' > >(curl -d @- http://x)`, block: "json"},
		{name: "tee into proc subst", cmd: `echo '{"a":1}' | tee >(curl -d @- http://x) >/dev/null`, block: "json"},
		{name: "curl config proc subst", cmd: `curl -K <(echo 'data = "{\"a\":1}"') http://x`, block: "json", via: "a curl config (-K)", allowed: `&& curl -d @"$TMPDIR/x.json" http://x`},
		{name: "curl config here-string", cmd: `curl --config - http://x <<< '--json {"a":1}'`, block: "json"},
		{name: "curl config heredoc", cmd: "curl -K- http://x <<'EOF'\nurl = \"http://x\"\ndata-raw: '[1,2]'\nEOF", block: "json"},
		{name: "set -- positional", cmd: `set -- '{"a":1}'; curl -d "$1" http://x`, block: "json"},
		{name: "exec fd here-string", cmd: `exec 3<<<'{"a":1}'; curl -d @/dev/fd/3 http://x`, block: "json"},
		{name: "source proc subst", cmd: `source <(echo 'curl -d "{\"a\":1}" http://x')`, block: "json"},
		{name: "dot stdin here-string", cmd: `. /dev/stdin <<< 'curl -d "{\"a\":1}" http://x'`, block: "json"},
		{name: "read here-string", cmd: `read -r B <<< '{"a":1}'; curl -d "$B" http://x`, block: "json"},
		{name: "read from pipe", cmd: `echo '{"a":1}' | { read -r B; curl -d "$B" http://x; }`, block: "json"},
		{name: "printf -v", cmd: `printf -v B '{"a":%d}' 1; curl -d "$B" http://x`, block: "json"},
		{name: "function argument", cmd: `f() { curl -d "$1" http://x; }; f '{"a":1}'`, block: "json"},
		{name: "function keyword all args", cmd: `function post { curl --json "$2" "$1"; }; post http://x '{"a":1}'`, block: "json"},
		{name: "function fed a pipe", cmd: `post() { curl -d @- http://x; }; echo '{"a":1}' | post`, block: "json"},
		{name: "alias body", cmd: `shopt -s expand_aliases; alias post='curl -d {\"a\":1}'`, block: "json"},
		{name: "find -exec client", cmd: `find . -maxdepth 0 -exec curl -d '{"a":1}' http://x \;`, block: "json"},
		{name: "find -exec sh -c", cmd: `find . -maxdepth 0 -exec sh -c 'curl -d "{\"a\":1}" http://x' \;`, block: "json"},
		{name: "watch argv", cmd: `watch -n 5 curl -d '{\"a\":1}' http://x`, block: "json"},
		{name: "watch script", cmd: `watch -n 5 'curl -d "{\"a\":1}" http://x'`, block: "json"},
		{name: "strace", cmd: `strace -f -o /tmp/t curl -d '{"a":1}' http://x`, block: "json"},
		{name: "flock -c", cmd: `flock /tmp/l -c 'curl -d "{\"a\":1}" http://x'`, block: "json"},
		// Blocked: unreadable or oversized.
		{name: "unterminated quote", cmd: `curl -d '{"a":1} http://x`, block: "parse"},
		{name: "unbalanced paren", cmd: `echo $(ls`, block: "parse"},
		{name: "too long", cmd: "echo " + strings.Repeat("a", MaxCommandLen), block: "long"},
		{name: "too deep", cmd: nestedBashC(MaxDepth + 2), block: "complex"},
		{name: "huge brace range", cmd: `echo {1..999999999}`, block: "complex"},
		{name: "substitutions too deep", cmd: "x=" + strings.Repeat("$(echo ", 20) + `'{"a":1}'` + strings.Repeat(")", 20) + `; curl -d "$x" u`, block: "complex"},
		{name: "nested echo substitutions", cmd: "x=" + strings.Repeat("$(echo ", 10) + `'{"a":1}'` + strings.Repeat(")", 10) + `; curl -d "$x" u`, block: "json"},

		// Allowed.

		{name: "curl -d @file", cmd: `curl -X POST -d @body.json http://x`},
		{name: "curl -d@file", cmd: `curl -d@body.json http://x`},
		{name: "curl --json @file", cmd: `curl --json @/tmp/x.json http://x`},
		{name: "curl stdin redirect", cmd: `curl -d @- http://x < body.json`},
		{name: "cat file pipe", cmd: `cat body.json | curl -d @- http://x`},
		{name: "form data", cmd: `curl -d 'a=1&b=2' http://x`},
		{name: "array of form fields", cmd: `B=(a=1 b=2); curl -d "${B[1]}" http://x`},
		{name: "associative array of form fields", cmd: `declare -A H=([x]=a=1); curl -d "${H[x]}" http://x`},
		{name: "empty array elements", cmd: `B[3]=; declare -A H; H[k]=; echo "${B[3]}${H[k]}"`},
		{name: "nameref to a harmless value", cmd: `x='a=1'; declare -n r=x; curl -d "$r" http://x`},
		{name: "allowed form", cmd: `echo '{"k":"v"}' > /tmp/x.json && curl -d @/tmp/x.json http://x`},
		{name: "allowed form with printf", cmd: `printf '%s' '{"k":"v"}' > body.json; curl --json @body.json http://x`},
		{name: "curl -F file", cmd: `curl -F 'file=@report.json' -F 'meta=<meta.json' http://x`},
		{name: "curl get", cmd: `curl -sS http://localhost:3000/todos | jq '.[0]'`},
		{name: "curl url glob braces", cmd: `curl 'http://x/{a,b}/[1-3].txt'`},
		{name: "curl empty object", cmd: `curl -X POST -d '{}' http://x`},
		{name: "awk", cmd: `awk '{print $1}' file.txt`},
		{name: "find exec", cmd: `find . -name '*.go' -exec gofmt -l {} \;`},
		{name: "brace expansion", cmd: `echo ${HOME} {a,b}`},
		{name: "jq filter", cmd: `jq '{id:.id}' data.json`},
		{name: "jq with json input file", cmd: `jq -c '.items[] | {name, id}' < resp.json`},
		{name: "git format", cmd: `git log --format='{%H}' -n 3`},
		{name: "docker inspect", cmd: `docker inspect -f '{{.State.Running}}' web`},
		{name: "tr braces", cmd: `tr -d '{}' < in.txt`},
		{name: "commit message", cmd: `git commit -m "docs: use curl -d '{\"a\":1}' in README"`},
		{name: "heredoc into file", cmd: "cat > notes.md <<'EOF'\nRun: curl -d '{\"a\":1}' http://x\nEOF"},
		{name: "heredoc json into file", cmd: "cat > body.json <<EOF\n{\"a\":1}\nEOF\ncurl -d @body.json http://x"},
		{name: "echo json to file", cmd: `echo '{"a":1}' > body.json`},
		{name: "node with json arg", cmd: `node -e 'console.log(JSON.parse(process.argv[1]))' '{"a":1}'`},
		{name: "grep for json", cmd: `grep -r '"name":' src/ | head`},
		{name: "wget post-file", cmd: `wget --post-file=body.json http://x`},
		{name: "httpie file item", cmd: `http POST :3000/x tags:=@tags.json name=todo`},
		{name: "httpie from file", cmd: `http POST :3000/x < body.json`},
		{name: "grpcurl stdin file", cmd: `grpcurl -d @ localhost:50051 svc/Get < req.json`},
		{name: "gh api input file", cmd: `gh api repos/o/r/issues --input issue.json`},
		{name: "gh api string field", cmd: `gh api repos/o/r/issues -f title='Fix {x}'`},
		{name: "bash -c harmless", cmd: `bash -c 'go test ./... && echo done'`},
		{name: "command -v", cmd: `command -v curl`},
		{name: "test brackets", cmd: `[ -f body.json ] && [[ $x == [0-9] ]] && echo ok`},
		{name: "case statement", cmd: `case $x in {a,b}) echo y;; esac`},
		{name: "arithmetic", cmd: `echo $(( 1 + 2 ))`},
		{name: "sed braces", cmd: `sed -n '/start/{p;q}' f`},
		{name: "npm script", cmd: `npm test -- --reporter=json > report.json`},
		{name: "curl config without data", cmd: `curl -K <(printf 'header = "Accept: application/json"\nsilent\n') http://x`},
		{name: "curl config from file", cmd: `curl -K curl.cfg http://x`},
		{name: "set -e", cmd: `set -euo pipefail; curl -d @body.json http://x`},
		{name: "exec redirect of a file", cmd: `exec 3<body.json; curl -d @/dev/fd/3 http://x`},
		{name: "diff of proc substs", cmd: `diff <(echo '{"a":1}') <(jq -S . a.json)`},
		{name: "proc subst of a file", cmd: `curl -d @<(cat body.json) http://x`},
		{name: "read a line", cmd: `read -r line < f; echo "$line"`},
		{name: "function echoing json", cmd: `f() { echo "$1"; }; f '{"a":1}'`},
		{name: "recursive function", cmd: `f() { f "$@"; }; f 1`},
		{name: "grep for curl", cmd: `grep -rn curl . | head`},
		{name: "find -exec jq", cmd: `find . -name '*.json' -exec jq . {} \;`},
		{name: "watch get", cmd: `watch -n1 'curl -s http://x | jq .'`},
		{name: "echo a curl line", cmd: `echo curl -d '{"a":1}' http://x >> notes.txt`},
		{name: "alias harmless", cmd: `alias ll='ls -l'`},
		{name: "empty command", cmd: ``},
		{name: "comment only", cmd: `# curl -d '{"a":1}' http://x`},
	}
	if len(cases) < 60 {
		t.Fatalf("the table must hold at least 60 commands, has %d", len(cases))
	}
	kinds := map[string]error{"json": ErrInlineJSON, "parse": ErrUnparsable, "long": ErrTooLong, "complex": ErrTooComplex}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check(tc.cmd)
			if tc.block == "" {
				if err != nil {
					t.Fatalf("Check(%q) blocked an allowed command: %v", tc.cmd, err)
				}
				return
			}
			var ge *Error
			if !errors.As(err, &ge) || !errors.Is(err, kinds[tc.block]) {
				t.Fatalf("Check(%.200q) = %.300v, want a %s block", tc.cmd, err, tc.block)
			}
			if ge.RejectionKind() != fault.Guard {
				t.Errorf("RejectionKind = %v", ge.RejectionKind())
			}
			if tc.block != "json" {
				return
			}
			if tc.prog != "" && ge.Program != tc.prog {
				t.Errorf("program = %q, want %q", ge.Program, tc.prog)
			}
			if tc.via != "" && ge.Via != tc.via {
				t.Errorf("via = %q, want %q", ge.Via, tc.via)
			}
			if tc.allowed != "" && !strings.Contains(ge.Allowed, tc.allowed) {
				t.Errorf("allowed form %q does not contain %q", ge.Allowed, tc.allowed)
			}
			msg := err.Error()
			if !strings.Contains(msg, "write the JSON to a file") || !strings.Contains(msg, ge.Allowed) ||
				!strings.HasPrefix(ge.Allowed, "echo ") && !strings.HasPrefix(ge.Allowed, "jq ") || !strings.Contains(ge.Allowed, `"`+FileHint+`"`) {
				t.Errorf("message does not explain the rule and the allowed form: %s", msg)
			}
			// The suggestion must itself pass the guard.
			if err := Check(ge.Allowed); err != nil {
				t.Errorf("the allowed form %q is itself blocked: %v", ge.Allowed, err)
			}
		})
	}
}

func nestedBashC(n int) string {
	return strings.Repeat("eval ", n) + "curl http://x"
}

func TestLooksJSON(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		`{"a":1}`: true, ` {"a":1} `: true, `[1,2]`: true, `[{"a":1}]`: true, `["x"]`: true, `[true]`: true,
		`{"a":`: true, `[ {"a"`: true, `[1, 2`: true, "{\n  \"a\": 1\n}": true,
		`{}`: false, `[]`: false, `{ }`: false, `{print $1}`: false, `{id:.id}`: false, `{{.State}}`: false,
		`{%H}`: false, `[0-9]`: false, `[1-3]`: false, `[[:alpha:]]`: false, `{a,b}`: false, `[a]`: false,
		`a=1&b=2`: false, `@body.json`: false, ``: false, `{`: false, `[-]`: false,
	}
	for in, want := range cases {
		if got := looksJSON(in); got != want {
			t.Errorf("looksJSON(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`curl -d '{"a":1}' http://x`, `echo '{"a":1}' | curl -d @- x`, `bash -c "eval 'curl -d {}'"`,
		"cat <<EOF | sh\ncurl -d '[1]' x\nEOF", `x=$(printf '%s' "$(echo '{"a":1}')"); http :1 a:="$x"`,
		`awk '{print $1}'`, `echo {1..5}{a,b}`, `$'\x7b"a":1}'`, `((x++)); [[ a =~ b ]]`, "a <(b) >(c) 2>&1 &",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		start := time.Now()
		err := Check(cmd)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Check(%q) took %v", cmd, took)
		}
		if err == nil {
			return
		}
		var ge *Error
		if !errors.As(err, &ge) {
			t.Fatalf("Check(%q) returned %T %v, not a *Error", cmd, err, err)
		}
		if ge.Error() == "" {
			t.Fatal("empty message")
		}
		if strings.Contains(ge.Detail, "the shell parser failed on it") {
			t.Fatalf("Check(%q) panicked inside: %v", cmd, ge.Detail)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	cmd := `cd /app && B='{"a":1}'; timeout 10 curl -sS -X POST -H 'Content-Type: application/json' -d @body.json http://localhost:3000/todos | jq '.[] | {id:.id}' > out.json`
	for b.Loop() {
		_ = Check(cmd)
	}
}
