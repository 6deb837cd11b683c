package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's TCP rules cover IPPROTO_TCP sockets only: a Multipath TCP
// socket (which Go's net.Listen and net.Dial use by default since Go 1.24
// where the kernel offers it) binds and connects past them. When a plan
// limits TCP, the confined thread also gets a seccomp filter that fails
// socket(2) for IPPROTO_MPTCP with EPROTONOSUPPORT, the answer of a kernel
// without MPTCP, so programs fall back to plain TCP, which Landlock checks.

const ipprotoMPTCP = 262

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

// mptcpFilter is the BPF program: a syscall of another ABI (i386 or x32,
// whose socket calls the checks below would not see) fails with EPERM;
// socket(domain, type, IPPROTO_MPTCP) fails with EPROTONOSUPPORT;
// everything else is allowed.
func mptcpFilter(arch uint32) []unix.SockFilter {
	const (
		offNr   = 0
		offArch = 4
		offArg2 = 16 + 2*8 // args[2], low 32 bits (little-endian)
		x32Bit  = 0x40000000
	)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	jge := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	return []unix.SockFilter{
		/* 0 */ ld(offArch),
		/* 1 */ jeq(arch, 1, 0), // native: on to 3
		/* 2 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
		/* 3 */ ld(offNr),
		/* 4 */ jge(x32Bit, 5, 0), // x32 numbers: to 10
		/* 5 */ jeq(uint32(unix.SYS_SOCKET), 0, 2), // not socket: to 8
		/* 6 */ ld(offArg2),
		/* 7 */ jeq(ipprotoMPTCP, 1, 0), // MPTCP: to 9
		/* 8 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 9 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)),
		/* 10 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
	}
}

// refuseMPTCP installs the filter on the calling thread only (no TSYNC,
// like the Landlock ruleset); no_new_privs must already be set.
func refuseMPTCP(arch uint32) error {
	prog := mptcpFilter(arch)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp filter refusing MPTCP sockets: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}
