// Command stub is the recording stub of the shell corpus: every program a
// corpus command may run is a small script on PATH whose #! line names this
// binary and whose second line names the program the script stands for. So
// a copy of the curl script under another name, or a link to it, still
// records itself as curl: what is recorded is what the file is, whatever it
// was called. The stub appends the script's arguments (the program's name
// first) as a JSON line to the log ($SHELLCORPUS_LOG, else the log the
// script names), then, for a program the script marks as passed through,
// execs the real program of that name found in the script's directories
// (it then finds the stubs on PATH for what it runs), else exits 0.
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// trailerMark starts the trailer; Trailer in the corpus package writes it.
const trailerMark = "\n#shellcorpus-stub:"

type trailer struct {
	Name string `json:"name"`
	Log  string `json:"log,omitempty"`
	Pass bool   `json:"pass,omitempty"`
	Real string `json:"real,omitempty"`
}

func main() {
	// The kernel runs a #! script as: stub SCRIPT ARGS…
	if len(os.Args) < 2 {
		os.Exit(98)
	}
	t, ok := readTrailer(os.Args[1])
	if !ok {
		os.Exit(97)
	}
	args := os.Args[2:]
	log := os.Getenv("SHELLCORPUS_LOG")
	if log == "" {
		log = t.Log
	}
	line, _ := json.Marshal(append([]string{t.Name}, args...))
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(99)
	}
	_, _ = f.Write(append(line, '\n'))
	_ = f.Close()
	if !t.Pass {
		os.Exit(0)
	}
	for _, dir := range strings.Split(t.Real, ":") {
		p := filepath.Join(dir, t.Name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			_ = syscall.Exec(p, append([]string{t.Name}, args...), os.Environ())
		}
	}
	os.Exit(127)
}

func readTrailer(script string) (trailer, bool) {
	buf, err := os.ReadFile(script)
	if err != nil || len(buf) > 64<<10 {
		return trailer{}, false
	}
	i := bytes.LastIndex(buf, []byte(trailerMark))
	if i < 0 {
		return trailer{}, false
	}
	var t trailer
	if json.Unmarshal(bytes.TrimSpace(buf[i+len(trailerMark):]), &t) != nil || t.Name == "" {
		return trailer{}, false
	}
	return t, true
}
