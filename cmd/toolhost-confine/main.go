// Command toolhost-confine is `toolhost confine` alone, in a binary a few
// MB small: what the hook's rewrite of the agent CLI's Bash runs when it is
// installed beside toolhost, so that each command pays a small exec, not a
// whole toolhost start. main only parses the flags and hands over to
// internal/confinecmd, the one owner of the command; it must never hold
// logic of its own, nor link what only toolhost's server needs (the test
// beside it checks).
package main

import (
	"errors"
	"flag"
	"os"

	"github.com/toolhost/toolhost/internal/confinecmd"
)

func main() {
	var o confinecmd.Options
	fs := o.FlagSet("toolhost-confine")
	switch err := fs.Parse(os.Args[1:]); {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		os.Exit(confinecmd.Usage)
	}
	os.Exit(confinecmd.Main([]string{os.Args[0]}, o, fs.Args()))
}
