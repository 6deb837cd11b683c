package hook

import "github.com/toolhost/toolhost/internal/claudecode"

// The Claude CLI's Bash keeps its working directory from one call to the
// next: it runs each command in its own shell and records where that shell
// ended. A command rewritten to run under `toolhost confine` changes
// directory in the confined child, so the CLI's shell would stay where it
// was. keepCwd makes the rewrite carry the directory back:
//
//   - the confined bash runs the command with eval (its text is an argument,
//     never spliced into code) and then writes `pwd -P` into a report file
//     made for this call by mktemp, the one file outside its allow-list it
//     may write (confine --cwd-file);
//   - `confine --take-cwd FILE` (confinecmd.TakeCwdReport), unconfined,
//     reads at most 4 KiB of it,
//     removes it, and prints it only when it is the absolute path of a
//     directory; the CLI's shell then changes there with the cd builtin
//     (zsh's -q: no chpwd hooks) and exits with the command's status.
//
// The confined command controls the report entirely, so it is treated as a
// directory name and nothing else: it is never evaluated, and a cd is all a
// report can cause (to a place the command could have cd'ed to itself). A
// command that exits early writes no report and the directory stays, as it
// does without the rewrite.
//
// The CLI's own check of a command refuses some shapes outright, in every
// mode where it asks: a brace next to a quote ("expansion obfuscation",
// so no { …; } group), an rm of a path held in a variable next to a
// bash -c script. The rewrite has neither.

// cwdRunner is the script the confined bash runs: $1 the report file, $2
// the command.
const cwdRunner = `__toolhost_cwd_file=$1 __toolhost_command=$2; shift 2; eval "$__toolhost_command"; __toolhost_status=$?; pwd -P >| "$__toolhost_cwd_file"; exit $__toolhost_status`

// keepCwd is the rewritten command: confine (how to run confine: the
// helper, or toolhost's subcommand) with flags running command, and the
// tail that moves the CLI's shell to where the command ended.
func keepCwd(confine, flags []string, command string) string {
	const file = `"$__toolhost_cwd"`
	self := claudecode.ShellJoin(confine)
	run := self + " " + claudecode.ShellJoin(flags) + " --cwd-file " + file + " " +
		claudecode.ShellJoin([]string{"--", "bash", "-c", cwdRunner, "bash"}) + " " + file + " " + claudecode.ShellJoin([]string{command})
	return `__toolhost_cwd=$(mktemp) && ` + run + `; __toolhost_status=$?; ` +
		`__toolhost_dir=$(` + self + ` --take-cwd ` + file + `); ` +
		`case $__toolhost_dir in /*) if [ -n "$ZSH_VERSION" ]; then builtin cd -q -- "$__toolhost_dir"; else builtin cd -- "$__toolhost_dir"; fi;; esac; ` +
		`(exit $__toolhost_status)`
}
