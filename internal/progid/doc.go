// Package progid identifies the program a shell command word runs by the
// file it resolves to, for the Bash guard's analysis and the policy rules'
// cmd facts (it implements bashguard.Programs).
//
// A word is looked up as bash looks it up: a path as written (relative to
// the working directory), a bare name along PATH. The file found is then
// followed through its symbolic links. The program is unknown when any of
// that lies where an agent may write — a write root of any agent, a
// command's private temp dir, or (when some agent's commands may run
// unconfined) anything this process's user can write — because such a
// file may be anything by the time the command runs: a copy of curl, a
// script, a link to another program. A directory of PATH an agent may
// write makes every name searched through it unknown, found there or not.
//
// Otherwise the file is named after the known program it is: the same
// file (a link, a hard link such as perl5.36.0, an alternatives link such
// as awk → mawk), or a file of the same content (a copy under another
// name, compared by sha256 when the sizes match). The known programs are
// bashguard.KnownPrograms looked up on PATH and in the system directories.
// A file that is none of them is named after the word (a versioned
// interpreter name taken as its interpreter). A file that is several known
// programs at once and run under none of their names (a multi-call binary)
// is unknown.
//
// This package reads the file system (stat, readlink, and the content of a
// file whose size matches a known program's); it never runs anything.
package progid
