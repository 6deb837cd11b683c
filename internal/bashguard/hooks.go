package bashguard

// hook analyses what assigning a variable makes bash run later: a prompt
// (PS4 is expanded before each command under set -x, PS0–PS2 by an
// interactive shell) runs its command substitutions, PROMPT_COMMAND runs
// as code before each prompt. They run at times the analysis does not
// follow, with whatever state the shell then has, so they are analysed
// with the state forgotten, in a world thrown away afterwards. (BASH_ENV
// and ENV are read when a shell starts: shells.go.)
func (c *checker) hook(name, val string) {
	switch name {
	case "PS0", "PS1", "PS2", "PS4":
		c.deferredRun(func() {
			c.sc.havoc()
			c.prompt(val, "$"+name)
		})
	case "BASH_ARGV0":
		// Assigning BASH_ARGV0 sets $0.
		c.sc.arg0 = val
	case "PROMPT_COMMAND":
		c.deferredRun(func() {
			c.sc.havoc()
			c.code(val, "PROMPT_COMMAND", []string{"PROMPT_COMMAND"}, -1)
		})
	}
}
