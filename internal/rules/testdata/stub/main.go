// Command stub is the recording stub of TestShellCorpus: bash finds it on
// PATH under a program's name; it appends its argv as a JSON line to the
// log ($RULES_STUB_LOG, else the binary's path + ".calls"), then, for a
// program named in $RULES_STUB_PASS, execs the real program found on
// $RULES_STUB_REALPATH, else exits 0.
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

func main() {
	name := filepath.Base(os.Args[0])
	log := os.Getenv("RULES_STUB_LOG")
	if log == "" {
		exe, _ := os.Executable()
		log = exe + ".calls"
	}
	line, _ := json.Marshal(append([]string{name}, os.Args[1:]...))
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(99)
	}
	_, _ = f.Write(append(line, '\n'))
	_ = f.Close()
	if !slices.Contains(strings.Split(os.Getenv("RULES_STUB_PASS"), ","), name) {
		os.Exit(0)
	}
	realPath := os.Getenv("RULES_STUB_REALPATH")
	if realPath == "" {
		realPath = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, dir := range strings.Split(realPath, ":") {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			// The real program finds the stubs on PATH for what it runs.
			_ = syscall.Exec(p, append([]string{name}, os.Args[1:]...), os.Environ())
		}
	}
	os.Exit(127)
}
