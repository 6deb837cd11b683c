package confine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Capabilities are a per-thread attribute in Linux, like the Landlock
// domain and the seccomp filter: dropping them on the thread that forks a
// command takes them from the command and from nothing else in toolhost.
//
// What a root command would otherwise keep: every capability in its
// effective set (chattr +i on any file, CAP_SYS_ADMIN for TIOCSTI into any
// terminal, CAP_DAC_OVERRIDE over every file mode) and, at each exec, the
// full set again (the kernel hands root all of its bounding set). So the
// bounding set is emptied and the securebits tell the kernel that uid 0 is
// not special at exec; then the ambient, inheritable, permitted and
// effective sets are cleared. A user without CAP_SETPCAP cannot change
// the bounding set or the securebits; it has nothing in the other sets to
// lose, and no_new_privs keeps it from gaining anything at exec.

// The securebits (linux/securebits.h), each with its lock.
const (
	secbitNoRoot              = 1 << 0
	secbitNoRootLocked        = 1 << 1
	secbitNoSetuidFixup       = 1 << 2
	secbitNoSetuidFixupLocked = 1 << 3
	secbitKeepCapsLocked      = 1 << 5
	secbitNoAmbientRaise      = 1 << 6
	secbitNoAmbientLocked     = 1 << 7

	lockedSecurebits = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoAmbientRaise | secbitNoAmbientLocked
)

// lastCap is the highest capability this kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			return n
		}
	}
	return unix.CAP_LAST_CAP
}

// dropCapabilities empties every capability set of the calling thread as
// far as its own capabilities allow. keep names capabilities (a bit mask)
// that stay in the thread's permitted and effective sets for the fork
// itself (CAP_SYS_ADMIN to create a PID namespace); the bounding set and
// the securebits already guarantee the command gets none of them at exec.
func dropCapabilities(keep uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	if eff&(1<<unix.CAP_SETPCAP) != 0 {
		for c, last := 0, lastCap(); c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
			}
		}
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	perm := uint64(data[0].Permitted) | uint64(data[1].Permitted)<<32
	keep &= perm
	data = [2]unix.CapUserData{
		{Effective: uint32(keep), Permitted: uint32(keep)},
		{Effective: uint32(keep >> 32), Permitted: uint32(keep >> 32)},
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
