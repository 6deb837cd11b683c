// Package rules is the policy file's ordered rules on the arguments of a
// call: each names a tool (or a glob over tool names), a CEL condition
// (cel.dev/cel-go) and an effect — deny, confirm or allow — with a reason.
// The first rule whose condition is true decides. The engine applies them
// in its rules stage, after schema validation and before confirmation;
// `toolhost hook pretooluse` applies the same rules to Claude CLI's
// built-in tools; `toolhost policy explain` says which rule decides a call.
//
// Rules are compiled and type-checked once per policy load (Compile, from
// policy.ParseWith): a rule that does not parse, names a variable or field
// that does not exist, compares values of different types or is not a
// boolean makes the whole file invalid (a *CompileError names each rule,
// its position and the error), and a running toolhost keeps its last good
// policy. Set.For picks, once per tool, the rules that can apply to it, so
// a call of a tool no rule names costs one map lookup.
//
// # What a condition reads
//
//   - args: the call's validated arguments. For a rule that names one tool
//     whose schema is known when the policy loads (toolhost's built-ins,
//     Claude CLI's — Catalog), args is typed from the tool's input schema:
//     an object with additionalProperties false is a struct whose fields
//     are checked when the policy loads (an absent field reads as its
//     type's zero value; has(args.f) tells whether it was given), an
//     "integer" is an int, a "number" a double, an object open to other
//     keys a map. A rule whose tool is a glob, or an upstream tool, sees
//     args as a map(string, dyn) (a number there is a double unless the
//     tool's schema, when known, says integer).
//   - tool, agent (the template name, devloop-coder), unit, project (the
//     project id; "" when none was given), now (a timestamp).
//   - cmd: for a tool that runs commands (the bash tool, spawn_units'
//     argv, the hook's Bash), what the project's shell parser sees of them
//     (bashguard.Analysis, and nothing else): programs, args, commands
//     (each with name, args, via, stdin, redirects, urls, hosts, shell,
//     defined), redirects (file targets), urls, hosts, runs_shell,
//     pipes_to_shell, unknowable, unknowns. A tool that runs no command has
//     an empty cmd (a rule naming such a tool may not read it).
//   - glob(path, pattern): doublestar matching with the sandbox's path
//     cleaning (sandbox.Clean); a path inside the project dir, relative or
//     absolute, matches relative patterns.
//
// # What the parser cannot know
//
// A program name computed at run time ($CC, "$(cat tool)"), an argument
// read from the environment or from a program's output, shell code built
// at run time (eval "$x") or read from a pipe (curl … | sh): cmd cannot
// say what runs. Such facts are unknown to CEL, which carries unknown
// through comparisons, functions and macros (three-valued logic: false &&
// unknown is false, true || unknown is true); code or a program the parser
// cannot read makes every list of cmd open (unknown size, more unknown
// elements), so `'git' in cmd.programs` is unknown, never false, for such a
// command. cmd.unknowable is then true and cmd.unknowns says what and why.
//
// Facts are sound: a program or argument given as known is what bash
// runs whenever that command runs (bashguard joins the paths a command may
// take, and Input.Programs names a program by the file it resolves to: a
// copy of curl is curl, a file an agent may write is unknown). Arguments
// of unknown number (a glob) leave the places of the later ones unknown.
// Shell functions are not programs: their bodies' commands are. A list of
// cmd compared with == or != must be on the left (CEL's own lists would
// answer false where cmd's answer unknown); such a rule does not compile
// otherwise.
//
// A rule whose condition is unknown may match: a deny or confirm rule then
// applies (the reason says what toolhost could not know), an allow rule
// does not (allowing needs certainty). So no rule over cmd.programs can be
// bypassed by hiding the program; a policy that wants to refuse every
// unknowable command says so with a rule on cmd.unknowable. A condition
// whose evaluation fails (a map key that is absent, the cost limit) is
// treated the same way: deny and confirm apply, allow does not.
//
// This package decides; it must never run a command, read a file or keep
// state between calls other than the compiled rules.
package rules
