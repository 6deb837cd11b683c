// Package hook is the Claude CLI's PreToolUse hook: for a call of the CLI's
// own tools (Bash, Write, Edit, MultiEdit, NotebookEdit) it applies the
// policy's rules, the Bash guard, the sandbox's write verdict and the
// CLI's own settings rules on the command as written, answers the CLI, and
// audits the decision in the project's trail. An allowed Bash command is
// rewritten to run under `toolhost confine` (and `toolhost hold`), with a
// tail that carries the shell's directory back (cwd.go).
//
// It reimplements none of those checks: each comes from the package that
// owns it (rules, bashguard, sandbox, confine). The cli package only wires
// the flags of `toolhost hook pretooluse` and `toolhost hook cwd` into
// Options and calls PreToolUse and TakeCwdReport.
package hook
