package confine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// ABIEnv caps the Landlock ABI toolhost uses (0: as if the kernel had no
// Landlock). It can only lower what the kernel offers.
const ABIEnv = "TOOLHOST_LANDLOCK_ABI"

// Kernel is the Landlock the running kernel offers, as toolhost will use it.
type Kernel struct {
	// ABI is the Landlock ABI version in use (0: none).
	ABI int `json:"abi"`
	// KernelABI is what the kernel reports (0: none).
	KernelABI int `json:"kernel_abi"`
	// Reason says why ABI is 0 or lower than KernelABI.
	Reason string `json:"reason,omitempty"`
}

// Detect asks the kernel for its Landlock ABI and applies ABIEnv.
func Detect() Kernel {
	return kernelFrom(abiVersion())
}

// kernelFrom is the Kernel of a Landlock version query's answer (ABI v,
// or the error it failed with; errors.ErrUnsupported where the system has
// no such call: landlock_other.go), with ABIEnv applied.
func kernelFrom(v int, err error) Kernel {
	var k Kernel
	switch {
	case err == nil:
		k.KernelABI = v
	case errors.Is(err, errors.ErrUnsupported):
		k.Reason = fmt.Sprintf("this system (%s) has no Landlock, a Linux kernel feature (5.13 or later)", runtime.GOOS)
	case errors.Is(err, unix.ENOSYS):
		k.Reason = "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)"
	case errors.Is(err, unix.EOPNOTSUPP):
		k.Reason = "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)"
	case errors.Is(err, unix.EPERM):
		k.Reason = "a seccomp filter refuses the Landlock system calls (a container runtime's default profile does this)"
	default:
		k.Reason = "the kernel refused the Landlock version query: " + err.Error()
	}
	k.ABI = k.KernelABI
	if s, ok := os.LookupEnv(ABIEnv); ok {
		n, err := strconv.Atoi(s)
		if err == nil && n >= 0 && n < k.ABI {
			k.ABI = n
			k.Reason = fmt.Sprintf("%s=%s caps the Landlock ABI at %d (the kernel offers %d)", ABIEnv, s, n, k.KernelABI)
			if n == 0 {
				k.Reason = fmt.Sprintf("%s=0 disables Landlock (the kernel offers ABI %d)", ABIEnv, k.KernelABI)
			}
		}
	}
	return k
}

// Feature levels.
const (
	abiNet    = 4 // TCP bind and connect
	abiScoped = 6 // signals and abstract unix sockets
	abiLogs   = 7 // audit logging of denials after exec
)

// machine is what this system offers a plan: its Landlock, and why it
// takes no seccomp filter ("" when it does: filterMissing). Prepare and
// Probe read it once per call (thisMachine); a test hands them another,
// such as the one macOS is (landlock_other.go, seccomp_other.go).
type machine struct {
	landlock Kernel
	noFilter string
}

func thisMachine() machine { return machine{landlock: Detect(), noFilter: filterMissing()} }
