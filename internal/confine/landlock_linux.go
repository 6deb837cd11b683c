package confine

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/agents"
)

// The three Landlock system calls, called directly. go-landlock's syscall
// package links libpsx (with cgo it wraps pthread_create for the whole
// program) for the all-threads enforcement toolhost must never use, and its
// rules open paths by name, following symlinks; what toolhost needs is
// three syscalls on descriptors it opened itself.

func abiVersion() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

func createRuleset(attr *unix.LandlockRulesetAttr) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// ruleNetPort and netPortAttr are struct landlock_net_port_attr (ABI 4),
// which x/sys does not define.
const ruleNetPort = 2

type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

func addRule(ruleset, kind int, attr unsafe.Pointer) error {
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), uintptr(kind), uintptr(attr), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func restrictSelf(ruleset int, flags uint32) error {
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), uintptr(flags), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Access rights, by what they are for.
const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileWrite are the rights a rule on a regular file or a device can hold.
	fileWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// dirWrite is everything a command may do beneath a write root. Device
	// nodes (make_char, make_block) are left out: nothing a command needs.
	// fileRights are all a rule on something that is not a directory may
	// hold (the kernel refuses directory rights there).
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | fileWrite | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	dirWrite   = fileWrite | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_REFER
)

// fsRights are the file-system rights ABI v understands.
func fsRights(v int) uint64 {
	var a uint64
	if v >= 1 {
		a = 1<<13 - 1 // execute … make_sym
	}
	if v >= 2 {
		a |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if v >= 3 {
		a |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if v >= 5 {
		a |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if v >= 9 {
		a |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return a
}

// ruleset builds a Landlock ruleset holding the plan's rules and returns
// its descriptor (close-on-exec).
func (p *Plan) ruleset() (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: p.handledFS, Handled_access_net: p.handledNet, Scoped: p.scoped}
	fd, err := createRuleset(&attr)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	for _, r := range p.rules {
		access := r.access & p.handledFS
		if !r.dir {
			access &= fileRights
		}
		if access == 0 {
			continue
		}
		a := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(r.fd)}
		if err := addRule(fd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&a)); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("landlock_add_rule %s: %w", r.name, err)
		}
	}
	for _, r := range p.ports {
		a := netPortAttr{allowedAccess: r.access, port: uint64(r.port)}
		if err := addRule(fd, ruleNetPort, unsafe.Pointer(&a)); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("landlock_add_rule port %d: %w", r.port, err)
		}
	}
	return fd, nil
}

// Restrict confines the calling OS thread to the plan: no capabilities,
// no_new_privs, the seccomp filter, then landlock_restrict_self without
// TSYNC, so only this thread (and what it forks or execs from now on) is
// confined. The caller must hold runtime.LockOSThread and never unlock it,
// so that the Go runtime discards the thread instead of running other
// goroutines on it. A plan whose mode is off does nothing; one the kernel
// cannot confine with Landlock (best-effort) still does the rest.
func (p *Plan) Restrict() error {
	if p.Mode == agents.CommandsOff {
		return nil
	}
	if err := dropCapabilities(0); err != nil {
		return err
	}
	// Without no_new_privs only CAP_SYS_ADMIN may restrict itself; set it
	// always, so root and everyone else get the same behaviour, and
	// nothing the command execs (setuid, file capabilities) gains a right.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if p.filter != nil {
		if err := installFilter(p.filter); err != nil {
			return err
		}
	}
	if p.ruleFD < 0 {
		return nil
	}
	var flags uint32
	if p.ABI >= abiLogs {
		// Denials of the command (a new program after exec) reach the
		// kernel's audit log, where an administrator can see them.
		flags |= unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
	}
	for _, fd := range []int{p.ruleFD, p.exclFD} {
		if fd < 0 || (fd == p.exclFD && p.exclByHolder) {
			continue
		}
		if err := restrictSelf(fd, flags); err != nil {
			if errors.Is(err, unix.E2BIG) {
				return fmt.Errorf("landlock_restrict_self: this process is already inside 16 nested Landlock domains: %w", err)
			}
			return fmt.Errorf("landlock_restrict_self: %w", err)
		}
	}
	return nil
}
