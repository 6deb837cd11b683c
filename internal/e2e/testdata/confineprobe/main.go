// Command confineprobe is what the confinement tests run as a unit: it
// tries what a hostile unit would, reports each outcome as one JSON line on
// stdout, and then stays up (listening on $PORT when it can).
//
//	-write P       create file P (repeatable)
//	-bind N        listen on TCP port N (repeatable; 0 means $PORT)
//	-signal PID    send signal 0 to PID (repeatable)
//	-fork          start a child that ignores SIGTERM and sleeps
//
// The last line it prints is {"check":"done"}.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// listeners stay open (and referenced) while the probe runs.
var listeners []net.Listener

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func report(check, target string, err error) {
	line := map[string]string{"check": check, "target": target, "result": "ok"}
	if err != nil {
		line["result"] = err.Error()
	}
	b, _ := json.Marshal(line)
	fmt.Println(string(b))
}

func main() {
	var writes, binds, signals list
	flag.Var(&writes, "write", "file to create")
	flag.Var(&binds, "bind", "TCP port to listen on (0: $PORT)")
	flag.Var(&signals, "signal", "pid to send signal 0")
	fork := flag.Bool("fork", false, "start a child that ignores SIGTERM")
	ignore := flag.Bool("ignore-term", false, "ignore SIGTERM and sleep (the forked child)")
	flag.Parse()
	if *ignore {
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return
	}
	for _, w := range writes {
		report("write", w, os.WriteFile(w, []byte("probe\n"), 0o644))
	}
	for _, b := range binds {
		port := b
		if b == "0" {
			port = os.Getenv("PORT")
		}
		l, err := net.Listen("tcp4", "127.0.0.1:"+port)
		report("bind", port, err)
		if err == nil {
			listeners = append(listeners, l)
		}
	}
	for _, s := range signals {
		pid, err := strconv.Atoi(s)
		if err == nil {
			err = syscall.Kill(pid, 0)
		}
		report("signal", s, err)
	}
	if *fork {
		c := exec.Command(os.Args[0], "-ignore-term")
		err := c.Start()
		pid := 0
		if err == nil {
			pid = c.Process.Pid
		}
		report("fork", strconv.Itoa(pid), err)
	}
	report("done", "", nil)
	for {
		time.Sleep(time.Hour)
	}
}
