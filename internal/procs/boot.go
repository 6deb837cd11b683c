package procs

import (
	"os"
	"strings"
)

// BootID is this boot of this machine (/proc/sys/kernel/random/boot_id),
// "" when unknown: a pid and its start ticks name a process only together
// with it, so a process announced by another machine (or before a
// reboot) is never looked up here.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
