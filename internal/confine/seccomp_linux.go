package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Every confined command also gets a seccomp filter, on the same thread and
// without TSYNC like the Landlock ruleset. It closes what Landlock does not
// see:
//
//   - io_uring: its SOCKET, BIND, CONNECT, OPENAT … operations are not
//     system calls, so no filter on socket(2) sees them (a unit listened on a
//     port not its own through IORING_OP_SOCKET with MPTCP). io_uring_setup,
//     _enter and _register fail with ENOSYS, the answer of a kernel built
//     without it, and programs (libuv, Node) fall back to plain calls.
//   - TIOCSTI and TIOCLINUX: pushing bytes into a terminal's input queue, or
//     pasting its selection, which a shell then runs as the human. A command
//     has no controlling terminal and no CAP_SYS_ADMIN, which the kernel
//     needs for either on another terminal; the filter refuses both outright
//     (EPERM), whatever descriptor a command holds.
//   - 32-bit and x32 system calls (EPERM): their numbers differ, so they
//     would pass every check below (socketcall(2) above all).
//   - When a plan limits TCP: Landlock's TCP rules cover IPPROTO_TCP sockets
//     only, and Multipath TCP (which Go's net.Listen and net.Dial use by
//     default) or SCTP would pass them. An AF_INET or AF_INET6 socket may
//     then only be TCP, UDP or ICMP; any other protocol fails with
//     EPROTONOSUPPORT, a kernel without it, so programs fall back to TCP.
//     And TCP Fast Open connects from inside sendto/sendmsg (MSG_FASTOPEN),
//     where Landlock's connect check never runs (a denied port was reached
//     that way on Linux 6.18): the flag fails with EOPNOTSUPP, the answer
//     of a kernel with Fast Open off; a plain connect still works.
//   - Resource limits, priorities and scheduling of other processes:
//     Landlock does not check prlimit64, setpriority, ioprio_set or the
//     sched_set* calls, which work on any process of the same user (a
//     command set toolhost's own RLIMIT_FSIZE to 1 byte, and its audit rows
//     and every later call failed). They may name only the caller itself
//     (pid or who 0: what setrlimit, nice, ionice COMMAND, taskset COMMAND
//     and chrt COMMAND pass); any other target is EPERM. A program that
//     pins its own threads by thread id is refused too.

// nativeArch is the seccomp audit arch of this build, 0 where the filter
// is not written for it.
func nativeArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// filterOptions are what one command's filter refuses beyond the fixed set.
type filterOptions struct {
	// tcpOnly refuses AF_INET/AF_INET6 sockets of protocols Landlock's TCP
	// rules do not cover.
	tcpOnly bool
}

// Offsets in struct seccomp_data; an argument's low 32 bits
// (little-endian, the only byte order of the arches above).
const (
	offNr   = 0
	offArch = 4
	x32Bit  = 0x40000000
)

func offArg(i int) uint32 { return uint32(16 + 8*i) }

// ioprioWhoProcess is ioprio_set's IOPRIO_WHO_PROCESS (linux/ioprio.h).
const ioprioWhoProcess = 1

// The protocols an internet socket may use when TCP is limited.
var tcpOnlyProtocols = []uint32{0, unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6}

// asm builds a BPF program with symbolic jump targets.
type asm struct {
	prog   []unix.SockFilter
	labels map[string]int
	// fixups are conditional jumps whose targets are labels: index,
	// true label, false label ("" for the next instruction).
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string
}

func (a *asm) label(name string) { a.labels[name] = len(a.prog) }

func (a *asm) ld(off uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *asm) ret(k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

// jump: if A op k goto jt else goto jf ("" is the next instruction).
func (a *asm) jump(op uint16, k uint32, jt, jf string) {
	a.fixups = append(a.fixups, fixup{at: len(a.prog), jt: jt, jf: jf})
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (a *asm) assemble() (seccompProgram, error) {
	for _, f := range a.fixups {
		for _, side := range []struct {
			label string
			off   *uint8
		}{{f.jt, &a.prog[f.at].Jt}, {f.jf, &a.prog[f.at].Jf}} {
			if side.label == "" {
				continue
			}
			to, ok := a.labels[side.label]
			d := to - f.at - 1
			if !ok || d < 0 || d > 255 {
				return nil, fmt.Errorf("seccomp filter: bad jump to %q", side.label)
			}
			*side.off = uint8(d)
		}
	}
	return a.prog, nil
}

func errno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// commandFilter is the BPF program of one command's filter.
func commandFilter(arch uint32, o filterOptions) (seccompProgram, error) {
	a := &asm{labels: map[string]int{}}
	a.ld(offArch)
	a.jump(unix.BPF_JEQ, arch, "", "eperm")
	a.ld(offNr)
	a.jump(unix.BPF_JGE, x32Bit, "eperm", "")
	for _, nr := range []uintptr{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER} {
		a.jump(unix.BPF_JEQ, uint32(nr), "enosys", "")
	}
	a.jump(unix.BPF_JEQ, unix.SYS_IOCTL, "ioctl", "")
	for _, nr := range []uintptr{unix.SYS_PRLIMIT64, unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM,
		unix.SYS_SCHED_SETATTR, unix.SYS_SCHED_SETAFFINITY} {
		a.jump(unix.BPF_JEQ, uint32(nr), "pid0", "")
	}
	a.jump(unix.BPF_JEQ, unix.SYS_SETPRIORITY, "prio", "")
	a.jump(unix.BPF_JEQ, unix.SYS_IOPRIO_SET, "ioprio", "")
	if o.tcpOnly {
		a.jump(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
		a.jump(unix.BPF_JEQ, unix.SYS_SENDTO, "flags3", "")
		a.jump(unix.BPF_JEQ, unix.SYS_SENDMMSG, "flags3", "")
		a.jump(unix.BPF_JEQ, unix.SYS_SENDMSG, "flags2", "")
	}
	a.ret(unix.SECCOMP_RET_ALLOW)

	a.label("ioctl")
	a.ld(offArg(1))
	a.jump(unix.BPF_JEQ, unix.TIOCSTI, "eperm", "")
	a.jump(unix.BPF_JEQ, unix.TIOCLINUX, "eperm", "")
	a.ret(unix.SECCOMP_RET_ALLOW)

	// Only the caller itself: pid 0 (a pid_t, so the low 32 bits are the
	// argument); setpriority's PRIO_PROCESS and ioprio_set's
	// IOPRIO_WHO_PROCESS with who 0.
	a.label("pid0")
	a.ld(offArg(0))
	a.jump(unix.BPF_JEQ, 0, "self", "eperm")
	a.label("prio")
	a.ld(offArg(0))
	a.jump(unix.BPF_JEQ, unix.PRIO_PROCESS, "", "eperm")
	a.ld(offArg(1))
	a.jump(unix.BPF_JEQ, 0, "self", "eperm")
	a.label("ioprio")
	a.ld(offArg(0))
	a.jump(unix.BPF_JEQ, ioprioWhoProcess, "", "eperm")
	a.ld(offArg(1))
	a.jump(unix.BPF_JEQ, 0, "self", "eperm")
	a.label("self")
	a.ret(unix.SECCOMP_RET_ALLOW)

	if o.tcpOnly {
		a.label("socket")
		a.ld(offArg(0))
		a.jump(unix.BPF_JEQ, unix.AF_INET, "inet", "")
		a.jump(unix.BPF_JEQ, unix.AF_INET6, "inet", "")
		a.ret(unix.SECCOMP_RET_ALLOW)
		a.label("inet")
		a.ld(offArg(2))
		for _, p := range tcpOnlyProtocols {
			a.jump(unix.BPF_JEQ, p, "allow", "")
		}
		a.ret(errno(unix.EPROTONOSUPPORT))
		a.label("allow")
		a.ret(unix.SECCOMP_RET_ALLOW)

		a.label("flags3")
		a.ld(offArg(3))
		a.jump(unix.BPF_JSET, unix.MSG_FASTOPEN, "eopnotsupp", "")
		a.ret(unix.SECCOMP_RET_ALLOW)
		a.label("flags2")
		a.ld(offArg(2))
		a.jump(unix.BPF_JSET, unix.MSG_FASTOPEN, "eopnotsupp", "")
		a.ret(unix.SECCOMP_RET_ALLOW)
		a.label("eopnotsupp")
		a.ret(errno(unix.EOPNOTSUPP))
	}

	a.label("enosys")
	a.ret(errno(unix.ENOSYS))
	a.label("eperm")
	a.ret(errno(unix.EPERM))
	return a.assemble()
}

// installFilter installs the filter on the calling thread only (no TSYNC,
// like the Landlock ruleset); no_new_privs must already be set.
func installFilter(prog seccompProgram) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}

// filterMissing says why this kernel and arch take no seccomp filter, ""
// when they do.
func filterMissing() string {
	if nativeArch() == 0 {
		return "no seccomp filter is written for " + runtime.GOARCH
	}
	// PR_GET_SECCOMP fails with EINVAL on a kernel without seccomp.
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return "this kernel has no seccomp filters"
	}
	return ""
}

// seccompProgram is a command's filter, as the kernel takes it.
type seccompProgram []unix.SockFilter

// buildFilter writes the filter, refusing the sockets TCP rules would not
// see whenever the plan has any.
func (p *Plan) buildFilter() error {
	if !p.canFilter {
		return nil
	}
	prog, err := commandFilter(nativeArch(), filterOptions{tcpOnly: p.handledNet != 0 || p.exclFD >= 0})
	if err != nil {
		return err
	}
	p.filter = prog
	return nil
}
