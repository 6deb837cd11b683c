package hook

import (
	"github.com/toolhost/toolhost/internal/claudecode"
	"github.com/toolhost/toolhost/internal/confinecmd"
)

// The Claude CLI's Bash keeps its working directory from one call to the
// next: it runs each command in its own shell and records where that shell
// ended. A command rewritten to run under `toolhost confine` changes
// directory in the confined child, so the CLI's shell would stay where it
// was. keepCwd makes the rewrite carry the directory back:
//
//   - confine --cwd-report 3 makes a report file for this call, the one
//     file outside its allow-list the confined command may write, and names
//     it in the command's TOOLHOST_CWD_FILE; the confined bash runs the
//     command with eval (its text is an argument, never spliced into code)
//     and then writes `pwd -P` there;
//   - once the command has exited, confine (unconfined: the process the
//     CLI's shell waits on) reads at most 4 KiB of the report
//     (confinecmd.TakeCwdReport), removes it, and writes it to descriptor 3
//     only when it is the absolute path of a directory;
//   - the CLI's shell takes descriptor 3 through a command substitution
//     while the command's own output goes to the shell's standard output
//     (descriptor 9, a copy of it), then changes there with the cd builtin
//     (zsh's -q: no chpwd hooks) and exits with the command's status.
//
// No process starts besides confine itself (the report used to cost a
// mktemp and a second confine to take it: ~3.4 ms of each call).
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

// cwdRunner is the script the confined bash runs: $1 the command.
const cwdRunner = `__toolhost_cwd_file=$` + confinecmd.CwdFileEnv + ` __toolhost_command=$1; unset ` + confinecmd.CwdFileEnv + `; shift; ` +
	`eval "$__toolhost_command"; __toolhost_status=$?; pwd -P >| "$__toolhost_cwd_file"; exit $__toolhost_status`

// keepCwd is the rewritten command: confine (how to run confine: the
// helper, or toolhost's subcommand) with flags running command, and the
// tail that moves the CLI's shell to where the command ended.
func keepCwd(confine, flags []string, command string) string {
	run := claudecode.ShellJoin(confine) + " " + claudecode.ShellJoin(flags) + " --cwd-report 3 " +
		claudecode.ShellJoin([]string{"--", "bash", "-c", cwdRunner, "bash", command})
	return `exec 9>&1 && __toolhost_dir=$(` + run + ` 3>&1 >&9 9>&-); __toolhost_status=$?; exec 9>&-; ` +
		`case $__toolhost_dir in /*) if [ -n "$ZSH_VERSION" ]; then builtin cd -q -- "$__toolhost_dir"; else builtin cd -- "$__toolhost_dir"; fi;; esac; ` +
		`(exit $__toolhost_status)`
}
