package shellcorpus

import "strings"

// wave3 are the techniques the third wave's red team found, each with its
// variants, judged like the rest by what bash runs.
var wave3 = []Case{
	// Arithmetic evaluates a value that is itself an expression: a name
	// in it is read and evaluated in turn, a subscript in it runs its
	// command substitutions — with or without a $ in the text.
	{Class: "arith", Name: "a bare name in [[ -lt ]]", Cmd: "x='a[$(curl -s http://127.0.0.1:9/x)]'; [[ x -lt 1 ]]"},
	{Class: "arith", Name: "a name naming a name", Cmd: "z='a[$(curl -s http://127.0.0.1:9/x)]'; y=z; : $((y))"},
	{Class: "arith", Name: "$y naming a name", Cmd: "z='a[$(curl -s http://127.0.0.1:9/x)]'; y=z; : $(($y))"},
	{Class: "arith", Name: "a chain of names", Cmd: "x1=x2; x2=x3; x3=x4; x4=x5; x5='a[$(curl -s http://127.0.0.1:9/x)]'; : $((x1))"},
	{Class: "arith", Name: "declare -i assigned a name", Cmd: "x='a[$(curl -s http://127.0.0.1:9/x)]'; declare -i y; y=x"},
	{Class: "arith", Name: "an array element", Cmd: "a=(1 'b[$(curl -s http://127.0.0.1:9/x)]'); : $((a[1]))"},
	{Class: "arith", Name: "an array as a name", Cmd: "a=('b[$(curl -s http://127.0.0.1:9/x)]'); : $((a))"},
	{Class: "arith", Name: "a number stays a number", Cmd: "n=3; [[ n -lt 4 ]] && git status 2>/dev/null", Ordinary: true},

	// declare, local, export, readonly and typeset read a quoted or
	// computed operand as NAME=VALUE; a nameref without a target takes
	// the first name assigned to it; printf -vNAME; a name read by read
	// that is only known when the command runs.
	{Class: "declare", Name: "declare of a quoted assignment", Cmd: "x=git; declare 'x=curl'; $x status"},
	{Class: "declare", Name: "declare of a partly quoted one", Cmd: "x=git; declare x\"=curl\"; $x status"},
	{Class: "declare", Name: "declare of a variable", Cmd: "x=git; v='x=curl'; declare \"$v\"; $x status"},
	{Class: "declare", Name: "export of a variable", Cmd: "x=git; v='x=curl'; export \"$v\"; $x status"},
	{Class: "declare", Name: "typeset unquoted", Cmd: "x=git; v='x=curl'; typeset $v; $x status"},
	{Class: "declare", Name: "local of a variable", Cmd: "f(){ x=git; v='x=curl'; local \"$v\"; $x status; }; f"},
	{Class: "declare", Name: "readonly of a variable", Cmd: "x=git; v='x=curl'; readonly \"$v\"; $x status"},
	{Class: "declare", Name: "a computed option", Cmd: "x=git; o=-n; declare $o r=x; r=curl; $x status"},
	{Class: "declare", Name: "nameref given its target later", Cmd: "x=git; declare -n r; r=x; r=curl; $x status"},
	{Class: "declare", Name: "unset -n removes the reference", Cmd: "x=curl; declare -n r=x; unset -n r; r=git; $x -s http://127.0.0.1:9/x"},
	{Class: "declare", Name: "read into a computed name", Cmd: "x=git; read ${n:-x} <<< curl; $x status"},
	{Class: "declare", Name: "printf -vNAME", Cmd: "x=git; printf -vx '%s' curl; $x status"},
	{Class: "declare", Name: "readonly assigns before it locks", Cmd: "x=git; readonly x=curl; $x -s http://127.0.0.1:9/x"},
	{Class: "declare", Name: "declare -r assigns before it locks", Cmd: "x=git; declare -r x=curl; $x -s http://127.0.0.1:9/x"},
	{Class: "declare", Name: "declare of a literal assignment", Cmd: "declare x=git; $x status 2>/dev/null", Ordinary: true},
}

// wave3Traps are the traps and history: code bash runs at moments the
// command chooses.
var wave3Traps = []Case{
	// An EXIT trap runs with the state the shell ends in, and the shell
	// may end before any statement.
	{Class: "trap", Name: "EXIT trap after set -e", Cmd: "x=curl; trap '$x -s http://127.0.0.1:9/x' EXIT; set -e; false; x=git"},
	{Class: "trap", Name: "EXIT trap after set -u", Cmd: "x=curl; trap '$x -s http://127.0.0.1:9/x' EXIT; set -u; : $nope; x=git", Unran: []string{"git"}},
	{Class: "trap", Name: "EXIT trap after ${x:?}", Cmd: "x=curl; trap '$x -s http://127.0.0.1:9/x' EXIT; : ${nope:?} 2>/dev/null; x=git", Unran: []string{"git"}},
	{Class: "trap", Name: "EXIT trap after kill $$", Cmd: "x=curl; trap '$x -s http://127.0.0.1:9/x' EXIT; kill $$; x=git", Unran: []string{"git"}},
	{Class: "trap", Name: "EXIT trap after a subshell fails under set -e", Cmd: "x=curl; trap '$x -s http://127.0.0.1:9/x' EXIT; set -e; (exit 1); x=git", Unran: []string{"git"}},
	{Class: "trap", Name: "EXIT trap of a plain script", Cmd: "t=notes.txt; trap 'rm -f \"$t\"' EXIT; git status 2>/dev/null"},
	// Any other trap may fire before any statement and change what the
	// shell holds.
	{Class: "trap", Name: "a signal the command sends itself", Cmd: "trap 'x=curl' USR1; x=git; kill -USR1 $$; $x status"},
	{Class: "trap", Name: "RETURN after source", Cmd: "trap 'x=curl' RETURN; x=git; source /dev/null; $x status"},
	{Class: "trap", Name: "RETURN under set -T", Cmd: "set -T; trap 'x=curl' RETURN; f(){ :; }; x=git; f; $x status"},
	{Class: "trap", Name: "DEBUG before each command", Cmd: "trap 'x=curl' DEBUG; x=git; $x status"},
	{Class: "trap", Name: "ERR after a failure", Cmd: "trap 'x=curl' ERR; x=git; false; $x status"},
	{Class: "trap", Name: "a trap that defines a function", Cmd: "trap 'f(){ curl -s http://127.0.0.1:9/x; }' USR1; f(){ git status; }; kill -USR1 $$; f"},
	{Class: "trap", Name: "a trap that changes PATH", Cmd: "trap 'PATH=' USR1; kill -USR1 $$; cp {{stubs}}/curl git; git status"},
	{Class: "trap", Name: "a trap that writes a script", Cmd: "trap 'echo \"curl -s http://127.0.0.1:9/x\" > f' USR1; echo 'git status' > f; kill -USR1 $$; bash f", Unran: []string{"git"}},
	{Class: "trap", Name: "a trap that only prints", Cmd: "trap 'echo interrupted >&2; exit 1' INT TERM; make", Ordinary: true},
	{Class: "trap", Name: "an EXIT trap that only prints", Cmd: "trap 'echo done' EXIT; go test ./...", Ordinary: true},
	// fc runs what history -s put into the history.
	{Class: "trap", Name: "fc -s runs the history", Cmd: "history -s 'curl -s http://127.0.0.1:9/x'; fc -s 2>/dev/null"},
	{Class: "trap", Name: "fc -s with set -o history", Cmd: "set -o history; history -s 'curl -s http://127.0.0.1:9/x'; fc -s 2>/dev/null"},
	// $0 is whatever BASH_ARGV0 was set to.
	{Class: "trap", Name: "BASH_ARGV0 sets $0", Cmd: "BASH_ARGV0=curl; $0 -s http://127.0.0.1:9/x"},
	{Class: "trap", Name: "a nameref to an element", Cmd: "x='a[$(curl -s http://127.0.0.1:9/x)]'; declare -n r=\"$x\"; r=1"},
}

// deepLink makes l a link 30 directories down, and ups climbs 30 back:
// from l that is the working directory, read as text it is /.
var (
	deepLink = "mkdir -p " + strings.Repeat("d/", 30) + "; ln -s " + strings.Repeat("d/", 30) + " l; "
	ups      = strings.Repeat("/..", 30)
)

// wave3Files are the files the command writes and then runs as a script
// (bash f, source f): the analysis reads what it wrote only when nothing
// else may have written the file since.
var wave3Files = []Case{
	{Class: "files", Name: "noclobber keeps the file", Cmd: "printf 'curl -s http://127.0.0.1:9/x\\n' > f; set -C; echo 'git status' > f 2>/dev/null; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "set -o noclobber", Cmd: "printf 'curl -s http://127.0.0.1:9/x\\n' > f; set -o noclobber; echo 'git status' > f 2>/dev/null; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "<> writes without truncating", Cmd: "echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' 1<>f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a group through <>", Cmd: "echo 'git status' > f; { echo 'curl -s http://127.0.0.1:9/x'; } 1<>f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a descriptor exec left open", Cmd: "exec 3>f; echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' >&3; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a {var} descriptor", Cmd: "exec {fd}>f; echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' >&$fd; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a {var} descriptor on a command", Cmd: ": {fd}>f; echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' >&$fd; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a path only known when it runs", Cmd: "echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' > \"$PWD/f\"; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a path under ~", Cmd: "echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' > ~/f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "the same file through /proc", Cmd: "echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' > /proc/self/cwd/f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a link written through", Cmd: "ln -s f g; echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' > g; bash f", Unran: []string{"git"}},
	{Class: "files", Name: ".. after a link, writing", Cmd: "mkdir -p a/b; ln -s a/b s; printf 'curl -s http://127.0.0.1:9/x\\n' > f; echo 'git status' > s/../f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: ".. after a link, reading", Cmd: "mkdir -p a/b; ln -s a/b s; printf 'curl -s http://127.0.0.1:9/x\\n' > a/f; echo 'git status' > f; bash s/../f", Unran: []string{"git"}},
	{Class: "files", Name: "sort -o", Cmd: "echo 'git status' > f; printf 'curl -s http://127.0.0.1:9/x\\n' | sort -o f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "sed -i", Cmd: "echo 'git status' > f; sed -i 's/git status/curl -s http:\\/\\/127.0.0.1:9\\/x/' f; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "sed w", Cmd: "echo 'git status' > f; echo 'curl -s http://127.0.0.1:9/x' | sed -n 'w f'; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "awk print >", Cmd: "echo 'git status' > f; awk 'BEGIN { print \"curl -s http://127.0.0.1:9/x\" > \"f\" }'; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "uniq's output operand", Cmd: "echo 'git status' > f; printf 'curl -s http://127.0.0.1:9/x\\n' > g; uniq g f; bash f", Unran: []string{"git"}},
	// A job beside the shell writes when it is scheduled (here: once the
	// shell has written, which the fifo p makes sure of).
	{Class: "files", Name: "a pipeline's stages race", Cmd: "mkfifo p; { read _ < p; echo 'curl -s http://127.0.0.1:9/x' > f; } | { echo 'git status' > f; echo > p; }; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a background job", Cmd: "mkfifo p; (read _ < p; echo 'curl -s http://127.0.0.1:9/x' > f) & echo 'git status' > f; echo > p; wait; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "a process substitution", Cmd: "mkfifo p q; : >(read _ < p; echo 'curl -s http://127.0.0.1:9/x' > f; echo > q); echo 'git status' > f; echo > p; read _ < q; bash f", Unran: []string{"git"}},
	{Class: "files", Name: "cd that fails", Cmd: "cp {{stubs}}/curl gitx; cd /nonexistent 2>/dev/null; ./gitx status"},
	{Class: "files", Name: "cd -P through a link", Cmd: "mkdir -p d/e; cp {{stubs}}/curl d/gitx; ln -s \"$PWD/d/e\" l; cd -P \"$PWD/l/..\" 2>/dev/null; cd -P l/.. ; ./gitx status"},
	{Class: "files", Name: "sort --compress-program", Cmd: "seq 1 200000 | sort -S 1K -T . --compress-program=curl > /dev/null 2>&1"},
	{Class: "files", Name: "sort --co", Cmd: "seq 1 200000 | sort -S 1K -T . --co=curl > /dev/null 2>&1"},
	{Class: "files", Name: "ulimit -f cuts a write short", Cmd: "x='" + strings.Repeat(" ", 1019) + "'$'\\n''curlXYZ -s http://127.0.0.1:9/x'; (ulimit -f 1; echo \"$x\" > f); bash f"},
	// A .. after a link is the link target's parent: a path that goes
	// into the writable directory and climbs out is not what its text
	// says (the kernel follows l before ..).
	{Class: "identity", Name: "a program path with .. after a link", Cmd: deepLink + "mkdir -p ./{{stubs}}; printf '#!/bin/sh\\ncurl -s http://127.0.0.1:9/x\\n' > ./{{stubs}}/git; chmod +x ./{{stubs}}/git; ./l" + ups + "{{stubs}}/git status"},
	{Class: "identity", Name: "a PATH directory with .. after a link", Cmd: deepLink + "mkdir -p ./{{stubs}}; cp {{stubs}}/curl ./{{stubs}}/git; PATH=l" + ups + "{{stubs}} git status"},
	{Class: "files", Name: "a script the command wrote", Cmd: "printf 'git status\\n' > s.sh; bash s.sh 2>/dev/null"},
}

// wave3Shell are the shell's modes and tables that change what a name
// runs: POSIX mode and other shells expand aliases, options reach a
// child bash through SHELLOPTS and BASHOPTS, an alias ending in a blank
// expands the next word, functions may be named with a slash, the table
// of hashed paths, IFS.
var wave3Shell = []Case{
	{Class: "alias", Name: "set -o posix expands aliases", Cmd: "set -o posix; alias git='curl -s http://127.0.0.1:9/x'\ngit status"},
	{Class: "alias", Name: "POSIXLY_CORRECT", Cmd: "POSIXLY_CORRECT=1; alias git='curl -s http://127.0.0.1:9/x'\ngit status"},
	{Class: "alias", Name: "bash --posix", Cmd: "bash --posix -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "bash -o posix", Cmd: "bash -o posix -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "an exported POSIXLY_CORRECT", Cmd: "export POSIXLY_CORRECT=1; bash -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "SHELLOPTS=posix through env", Cmd: "env SHELLOPTS=posix bash -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "BASHOPTS through env", Cmd: "env BASHOPTS=expand_aliases bash -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "an exported BASHOPTS", Cmd: "shopt -s expand_aliases; export BASHOPTS; bash -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "exported before the shopt", Cmd: "export BASHOPTS; shopt -s expand_aliases; bash -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "sh expands aliases", Cmd: "sh -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\""},
	{Class: "alias", Name: "a trailing blank expands the next word", Cmd: "shopt -s expand_aliases\nalias x='curl ' y='-s http://127.0.0.1:9/x'\nx y"},
	{Class: "alias", Name: "an alias for a wrapper", Cmd: "shopt -s expand_aliases\nalias e='env ' git='curl'\ne git -s http://127.0.0.1:9/x"},
	{Class: "alias", Name: "a function named with a slash", Cmd: "{{stubs}}/git() { curl -s http://127.0.0.1:9/x; }; {{stubs}}/git status", Unran: []string{"git"}},
	{Class: "alias", Name: "hash -p … --", Cmd: "hash -p {{stubs}}/curl -- git 2>/dev/null; git status"},
	{Class: "alias", Name: "hash -p of two names", Cmd: "hash -p {{stubs}}/curl npm git; git status"},
	{Class: "alias", Name: "assigning PATH empties the hash table", Cmd: "hash -p {{stubs}}/git curl; PATH=$PATH; curl -s http://127.0.0.1:9/x"},
	{Class: "alias", Name: "PATH=… before a command skips the table", Cmd: "hash -p {{stubs}}/git curl; PATH=$PATH curl -s http://127.0.0.1:9/x"},
	{Class: "alias", Name: "the table after PATH=… cmd", Cmd: "hash -p {{stubs}}/curl git; PATH=$PATH true; git status"},
	{Class: "alias", Name: "env searches PATH itself", Cmd: "hash -p {{stubs}}/git curl; env curl -s http://127.0.0.1:9/x"},
	{Class: "alias", Name: "IFS starts as a blank", Cmd: "x=\"curl${IFS}status\"; $x"},
	{Class: "alias", Name: "IFS outside ASCII", Cmd: "IFS=é; x=$'curl\\xc3status'; $x"},
}

// wave3Words are expansions and program options the analysis computed
// differently from bash: a value outside ASCII cut or matched (bash in
// the C locale counts bytes), arrays whose elements are not all known
// (BASH_REMATCH, an index or key only known at run time), awk's program
// files, find's -exec terminator, hash -t, the readonly SHELLOPTS and
// BASHOPTS, unset of a readonly variable, xargs's end-of-input string and
// -I items, env's -S escapes and its options with an optional value.
var wave3Words = []Case{
	{Class: "locale", Name: "${x:2} of a value outside ASCII", Cmd: "x='écurl'; ${x:2} -s http://127.0.0.1:9/x"},
	{Class: "locale", Name: "${x#??}", Cmd: "x='écurl'; ${x#??} -s http://127.0.0.1:9/x"},
	{Class: "locale", Name: "${x/??/}", Cmd: "x='écurl'; ${x/??/} -s http://127.0.0.1:9/x"},
	{Class: "locale", Name: "${x%??}", Cmd: "x='curlé'; ${x%??} -s http://127.0.0.1:9/x"},
	{Class: "locale", Name: "$'…' bytes", Cmd: "x=$'\\xc3\\xa9curl'; ${x:2} -s http://127.0.0.1:9/x"},
	{Class: "locale", Name: "printf -v then a slice", Cmd: "printf -v x '%s' 'écurl'; ${x:2} status"},
	{Class: "locale", Name: "a value outside ASCII used whole", Cmd: "m='café'; git status 2>/dev/null; echo \"$m\"", Ordinary: true},
	{Class: "arrays", Name: "BASH_REMATCH", Cmd: "x=git; [[ curl =~ (c.*) ]]; ${BASH_REMATCH[1]} status"},
	{Class: "arrays", Name: "BASH_REMATCH in a word", Cmd: "[[ curl =~ c(.*) ]]; c${BASH_REMATCH[1]} status"},
	{Class: "arrays", Name: "an element past what read gave", Cmd: "read -ra a <<< \"$(echo git x curl | tr a a)\"; ${a[2]} status"},
	{Class: "arrays", Name: "a key only known at run time", Cmd: "declare -A m; read -r k <<< \"$(echo k | tr a a)\"; m[$k]=curl; ${m[k]} status"},
	{Class: "arrays", Name: "an index only known at run time", Cmd: "i=$(tr a a <<< 0); a=(git); a[$i]=curl; ${a[0]} status"},
	{Class: "programs", Name: "awk -W exec", Cmd: "awk -W exec <(echo 'BEGIN{system(\"curl -s http://127.0.0.1:9/x\")}')"},
	{Class: "programs", Name: "awk -We", Cmd: "awk -We <(echo 'BEGIN{system(\"curl -s http://127.0.0.1:9/x\")}')"},
	{Class: "programs", Name: "find -exec with a + argument", Cmd: "find . -maxdepth 0 -exec echo + \\; -exec curl -s http://127.0.0.1:9/x \\;"},
	{Class: "programs", Name: "hash -t assigns nothing", Cmd: "hash -tp {{stubs}}/curl git 2>/dev/null; git status"},
	{Class: "programs", Name: "hash -l still assigns", Cmd: "hash -lp {{stubs}}/curl git >/dev/null; git status"},
	{Class: "programs", Name: "BASHOPTS is readonly", Cmd: "BASHOPTS=expand_aliases bash -c \"alias git='curl -s http://127.0.0.1:9/x'\ngit status\" 2>/dev/null"},
	{Class: "programs", Name: "unset of a readonly variable", Cmd: "readonly x=curl; unset x 2>/dev/null; $x -s http://127.0.0.1:9/x"},
	{Class: "programs", Name: "xargs -e ends the input", Cmd: "echo 'git status _ curl status' | xargs -e_ env 2>/dev/null"},
	{Class: "programs", Name: "xargs -I takes whole lines", Cmd: "echo 'curl status' | xargs -I{} sh -c '{}'"},
	{Class: "programs", Name: "env -S's \\_", Cmd: "env -S 'curl\\_status'"},
	{Class: "programs", Name: "env --ignore-signal", Cmd: "env --ignore-signal curl status"},
	{Class: "programs", Name: "env --block-signal", Cmd: "env --block-signal curl status"},
	{Class: "programs", Name: "an abbreviated env option", Cmd: "env --sp='curl status'"},
	{Class: "programs", Name: "compgen -C runs a command", Cmd: "compgen -C 'curl -s http://127.0.0.1:9/x' x >/dev/null 2>&1"},
	{Class: "programs", Name: "compgen -F calls a function", Cmd: "f() { x=curl; }; x=git; compgen -F f w >/dev/null 2>&1; $x status"},
	{Class: "declare", Name: "+= through a nameref", Cmd: "x=git; declare -n r=x; r+=x; ${r%x} status 2>/dev/null"},
	{Class: "declare", Name: "${!y/…/…}", Cmd: "x=git; y=x; ${!y/git/curl} status"},
	// A command line inside one argument of a program that runs it
	// through a shell (zip and sqlite3 are real: scripts/deps).
	{Class: "programs", Name: "zip -TT runs a command", Cmd: "printf x > n.txt; zip -q -T -TT 'curl -s http://127.0.0.1:9/x' z.zip n.txt"},
	{Class: "programs", Name: "sqlite3 .shell", Cmd: "sqlite3 :memory: '.shell curl -s http://127.0.0.1:9/x'"},
	{Class: "programs", Name: "sqlite3 .system", Cmd: "sqlite3 :memory: '.system curl -s http://127.0.0.1:9/x'"},
	{Class: "programs", Name: "strace -o '|cmd'", Cmd: "strace -o '|curl -s http://127.0.0.1:9/x' true"},
}
