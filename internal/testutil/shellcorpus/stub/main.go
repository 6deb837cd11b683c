// Command stub is the recording stub of the shell corpus: every program a
// corpus command may run is a copy of this binary on PATH, with the name of
// the program the copy stands for appended to it (a trailer, which the ELF
// loader ignores). So a copy of the curl stub under another name, or a
// link to it, still records itself as curl: what is recorded is what the
// file is, whatever it was called. It appends its argv (its own name
// first) as a JSON line to the log ($SHELLCORPUS_LOG, else the log the
// trailer names), then, for a program the trailer marks as passed through,
// execs the real program of that name found in the trailer's directories
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
	exe, err := os.Executable()
	if err != nil {
		os.Exit(98)
	}
	t, ok := readTrailer(exe)
	if !ok {
		os.Exit(97)
	}
	log := os.Getenv("SHELLCORPUS_LOG")
	if log == "" {
		log = t.Log
	}
	line, _ := json.Marshal(append([]string{t.Name}, os.Args[1:]...))
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
			_ = syscall.Exec(p, append([]string{t.Name}, os.Args[1:]...), os.Environ())
		}
	}
	os.Exit(127)
}

func readTrailer(exe string) (trailer, bool) {
	f, err := os.Open(exe)
	if err != nil {
		return trailer{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return trailer{}, false
	}
	const tail = 4096
	off := max(fi.Size()-tail, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
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
