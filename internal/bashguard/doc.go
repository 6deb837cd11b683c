// Package bashguard decides whether a shell command hands inline JSON to an
// HTTP client, the mistake the devloop agents make most: JSON written inside
// a shell command breaks on quoting and escaping, so the command must write
// the JSON to a file and pass the file (curl -d @file).
//
// Check parses the command with mvdan.cc/sh/v3/syntax (bash dialect) and
// inspects every simple command with its words resolved by
// mvdan.cc/sh/v3/expand: quotes removed, $'…' decoded, variables assigned
// earlier in the same command substituted, echo/printf/heredoc output of
// command substitutions and pipes followed. It looks through pipelines,
// lists, subshells, $(…) and backticks, if/for/while bodies, wrappers
// (timeout, env, nice, nohup, command, sudo, xargs …, a path such as
// /usr/bin/curl, \curl, c""url), programs it does not know whose later
// arguments start an HTTP client, a shell -c or eval (find -exec curl …,
// strace curl …, watch curl …), and re-parses bash -c / sh -c / eval strings,
// scripts piped into a shell or sourced from <(…) or stdin, alias values and
// the command-line arguments of runners (watch 'cmd', flock f -c 'cmd', ssh
// host 'cmd'), up to MaxDepth levels. Process substitutions count as what
// they print (curl -d @<(echo …)) or, for >(…), as fed what the statement
// prints; read, mapfile and printf -v set variables from their input, array
// assignments (B=(…), B+=(…), B[i]=…, declare -A) give ${B[i]} its element
// and declare -n r=x makes $r read x; a call
// to a function defined in the command checks its body with the call's
// arguments as $1 … (at most 256 calls per check).
//
// What is blocked: a JSON object or array given to an HTTP client (curl,
// wget, httpie http/https, xh, grpcurl, gh api) as an argument or option
// value (curl -d/--data*/--json/-F, wget --post-data/--body-data, httpie
// key:=, grpcurl -d, gh api -f/-F), on its standard input through a
// here-string, a heredoc or a pipe from a command that prints it, or as a
// data option of a curl config (-K) read from a process substitution or
// stdin. A command
// that cannot be parsed, is longer than MaxCommandLen or expands beyond the
// work budget is blocked too: the guard never allows what it cannot read.
//
// What "JSON" means: after trimming white space, a value that parses as a
// non-empty JSON object or array, or that clearly starts like one — "{"
// followed by a quoted key, or "[" followed by an object, a string, a nested
// array, a number, true, false or null. Braces without a quoted key
// (awk '{print $1}', jq '{id:.id}', {{.State}}, {%H}) are not JSON, and the
// empty "{}" and "[]" are left alone because find/xargs use them as
// placeholders.
//
// This package must never execute anything: command substitutions are
// approximated from their source (echo, printf, heredocs), never run, and
// globbing and ~user lookups are disabled.
package bashguard
