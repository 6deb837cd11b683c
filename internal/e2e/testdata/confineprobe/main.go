// Command confineprobe is what the confinement tests run as a command, a
// unit or behind a hook's rewrite: it tries what a hostile process would,
// reports each outcome as one JSON line on stdout, and then stays up
// (listening on $PORT when it can) unless -exit is given.
//
//	-write P         create file P (repeatable)
//	-bind N          listen on TCP port N (repeatable; 0 means $PORT)
//	-signal PID      send signal 0 to PID (repeatable)
//	-sigkill PID     send SIGKILL to PID (repeatable)
//	-fork            start a child that ignores SIGTERM and sleeps
//	-read P          read file P and report its content (repeatable)
//	-list D          list directory D (repeatable)
//	-env NAME        report the variable's value (repeatable)
//	-fds             write a line to every descriptor above stderr
//	-tiocsti T       push "echo PWNED" and a newline into the input of the
//	                 terminal T: a path opened read-only, or fd:N (repeatable)
//	-chattr P        set the immutable flag of file P (repeatable)
//	-chown P         give file P to uid 4242 (repeatable)
//	-connect N       connect to 127.0.0.1:N and send "probe" (repeatable)
//	-mptcp N         the same over a Multipath TCP socket (repeatable)
//	-tfo N           the same with TCP Fast Open: sendto(MSG_FASTOPEN) (repeatable)
//	-uring N         the same through io_uring: IORING_OP_SOCKET (MPTCP)
//	                 and IORING_OP_CONNECT (repeatable)
//	-caps            report the capability sets and the session
//	-exit            exit after reporting
//
// The last line it prints is {"check":"done"}. A path argument may hold
// {ppid}, replaced by the probe's parent pid.
//
// As a wrapper it stands for the human's shell in front of toolhost:
//
//	confineprobe -wrap [-ctty PTS] [-fd N=PATH]… -- PROGRAM ARGS…
//
// makes the terminal PTS its controlling terminal (it must lead a session
// without one), opens PATH for appending as descriptor N without
// close-on-exec (like `exec 7>>PATH` in a shell), and execs PROGRAM.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
	"unsafe"

	"golang.org/x/sys/unix"
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

func reportValue(check, target, value string) {
	b, _ := json.Marshal(map[string]string{"check": check, "target": target, "result": "ok", "value": value})
	fmt.Println(string(b))
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-wrap" {
		wrap(os.Args[2:])
		return
	}
	var writes, binds, signals, kills, reads, lists, envs, ttys, chattrs, chowns, connects, mptcps, tfos, urings list
	flag.Var(&writes, "write", "file to create")
	flag.Var(&binds, "bind", "TCP port to listen on (0: $PORT)")
	flag.Var(&signals, "signal", "pid to send signal 0")
	flag.Var(&kills, "sigkill", "pid to send SIGKILL")
	flag.Var(&reads, "read", "file to read")
	flag.Var(&lists, "list", "directory to list")
	flag.Var(&envs, "env", "variable to report")
	flag.Var(&ttys, "tiocsti", "terminal to push input into (path or fd:N)")
	flag.Var(&chattrs, "chattr", "file to make immutable")
	flag.Var(&chowns, "chown", "file to give to uid 4242")
	flag.Var(&connects, "connect", "loopback TCP port to connect to")
	flag.Var(&mptcps, "mptcp", "loopback port to connect to over MPTCP")
	flag.Var(&tfos, "tfo", "loopback port to reach with TCP Fast Open")
	flag.Var(&urings, "uring", "loopback port to connect to through io_uring")
	fork := flag.Bool("fork", false, "start a child that ignores SIGTERM")
	fds := flag.Bool("fds", false, "write to every descriptor above stderr")
	caps := flag.Bool("caps", false, "report capabilities and session")
	exit := flag.Bool("exit", false, "exit after reporting")
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
		report("signal", s, withPID(s, func(pid int) error { return syscall.Kill(pid, 0) }))
	}
	for _, s := range kills {
		report("sigkill", s, withPID(s, func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }))
	}
	for _, r := range reads {
		r = strings.ReplaceAll(r, "{ppid}", strconv.Itoa(os.Getppid()))
		b, err := os.ReadFile(r)
		if err != nil {
			report("read", r, err)
		} else {
			reportValue("read", r, string(b))
		}
	}
	for _, d := range lists {
		entries, err := os.ReadDir(d)
		if err != nil {
			report("list", d, err)
			continue
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		reportValue("list", d, strings.Join(names, " "))
	}
	for _, e := range envs {
		v, ok := os.LookupEnv(e)
		if !ok {
			report("env", e, errors.New("unset"))
		} else {
			reportValue("env", e, v)
		}
	}
	if *fds {
		writeFDs()
	}
	for _, t := range ttys {
		report("tiocsti", t, tiocsti(t))
	}
	for _, p := range chattrs {
		report("chattr", p, chattr(p))
	}
	for _, p := range chowns {
		report("chown", p, os.Chown(p, 4242, -1))
	}
	for _, p := range connects {
		report("connect", p, withPort(p, func(port int) error { return dial(unix.IPPROTO_TCP, port) }))
	}
	for _, p := range mptcps {
		report("mptcp", p, withPort(p, func(port int) error { return dial(unix.IPPROTO_MPTCP, port) }))
	}
	for _, p := range tfos {
		report("tfo", p, withPort(p, fastOpen))
	}
	for _, p := range urings {
		report("uring", p, withPort(p, uringConnect))
	}
	if *caps {
		reportCaps()
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
	if *exit {
		return
	}
	for {
		time.Sleep(time.Hour)
	}
}

func withPID(s string, f func(int) error) error {
	pid, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	return f(pid)
}

func withPort(s string, f func(int) error) error {
	port, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	return f(port)
}

// writeFDs writes to every open descriptor above stderr (one inherited
// without close-on-exec would reach a file outside the sandbox).
func writeFDs() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		report("fds", "", err)
		return
	}
	var open []string
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if strings.HasPrefix(target, "/proc/") {
			continue // the directory being read
		}
		_, werr := unix.Write(fd, []byte("written through an inherited descriptor\n"))
		open = append(open, fmt.Sprintf("%d=%s(%v)", fd, target, werr))
	}
	reportValue("fds", "", strings.Join(open, " "))
}

// tiocsti pushes a command line into a terminal's input queue, as if typed.
func tiocsti(t string) error {
	var fd int
	if n, ok := strings.CutPrefix(t, "fd:"); ok {
		var err error
		if fd, err = strconv.Atoi(n); err != nil {
			return err
		}
	} else {
		f, err := os.OpenFile(t, os.O_RDONLY|unix.O_NOCTTY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fd = int(f.Fd())
	}
	for _, c := range []byte("echo PWNED\n") {
		b := c
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&b))); errno != 0 {
			return errno
		}
	}
	return nil
}

// fsImmutable is FS_IMMUTABLE_FL (linux/fs.h): chattr +i.
const fsImmutable = 0x10

func chattr(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsImmutable))
}

func loopback(port int) *unix.SockaddrInet4 {
	return &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
}

func dial(proto, port int) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(s)
	if err := unix.Connect(s, loopback(port)); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	_, err = unix.Write(s, []byte("probe\n"))
	return err
}

func fastOpen(port int) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(s)
	if err := unix.Sendto(s, []byte("probe\n"), unix.MSG_FASTOPEN, loopback(port)); err != nil {
		return fmt.Errorf("sendto: %w", err)
	}
	return nil
}

func reportCaps() {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		report("caps", "", err)
		return
	}
	var keep []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"} {
			if bytes.HasPrefix(line, []byte(k+":")) {
				keep = append(keep, strings.Join(strings.Fields(string(line)), " "))
			}
		}
	}
	sid, _ := unix.Getsid(0)
	keep = append(keep, fmt.Sprintf("sid=%d pid=%d", sid, os.Getpid()))
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		f.Close()
		keep = append(keep, "tty=open")
	} else {
		keep = append(keep, "tty="+err.Error())
	}
	reportValue("caps", "", strings.Join(keep, "; "))
}

// wrap sets up the terminal and descriptors, then execs the program.
func wrap(args []string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "confineprobe -wrap:", err)
		os.Exit(125)
	}
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			fail(fmt.Errorf("%s needs a value", args[0]))
		}
		switch args[0] {
		case "-ctty":
			// A session leader without a terminal acquires the first one
			// it opens.
			f, err := os.OpenFile(args[1], os.O_RDWR, 0)
			if err != nil {
				fail(err)
			}
			defer f.Close()
		case "-fd":
			n, path, ok := strings.Cut(args[1], "=")
			fd, err := strconv.Atoi(n)
			if !ok || err != nil || fd < 3 {
				fail(fmt.Errorf("-fd %s: want N=PATH with N > 2", args[1]))
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				fail(err)
			}
			if err := unix.Dup3(int(f.Fd()), fd, 0); err != nil {
				fail(err)
			}
		default:
			fail(fmt.Errorf("unknown option %s", args[0]))
		}
		args = args[2:]
	}
	if len(args) < 2 {
		fail(errors.New("nothing to run after --"))
	}
	path, err := exec.LookPath(args[1])
	if err != nil {
		fail(err)
	}
	fail(syscall.Exec(path, args[1:], os.Environ()))
}
