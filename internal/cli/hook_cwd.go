package cli

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
//   - the unconfined tail, in the CLI's shell, reads at most 4 KiB of it,
//     removes it, and only changes directory to it when it is an absolute
//     path of a directory, with the shell's cd builtin (zsh's -q: no chpwd
//     hooks), then exits with the command's status.
//
// The confined command controls the report entirely, so the tail treats it
// as a directory name and nothing else: it is never evaluated, and a cd is
// all a report can cause (to a place the command could have cd'ed to
// itself). A command that exits early writes no report and the directory
// stays, as it does without the rewrite.

// cwdRunner is the script the confined bash runs: $1 the report file, $2
// the command.
const cwdRunner = `__toolhost_cwd_file=$1 __toolhost_command=$2; shift 2; eval "$__toolhost_command"; __toolhost_status=$?; pwd -P >| "$__toolhost_cwd_file"; exit $__toolhost_status`

// keepCwd is the rewritten command: confine (its argv up to, not
// including, "--") running command, and the tail that moves the CLI's
// shell to where the command ended.
func keepCwd(confine []string, command string) string {
	const file = `"$__toolhost_cwd"`
	run := claudecode.ShellJoin(confine) + " --cwd-file " + file + " " +
		claudecode.ShellJoin([]string{"--", "bash", "-c", cwdRunner, "bash"}) + " " + file + " " + claudecode.ShellJoin([]string{command})
	return `__toolhost_cwd=$(mktemp) && { ` + run + `; __toolhost_status=$?; ` +
		`__toolhost_dir=$(head -c 4096 -- "$__toolhost_cwd"); rm -f -- "$__toolhost_cwd"; ` +
		`case $__toolhost_dir in /*) if [ -d "$__toolhost_dir" ]; then if [ -n "${ZSH_VERSION-}" ]; then builtin cd -q -- "$__toolhost_dir"; else builtin cd -- "$__toolhost_dir"; fi; fi;; esac; ` +
		`(exit $__toolhost_status); }`
}
