package progid

import "syscall"

// changeTime is the file's status change time (st_ctimespec), in
// nanoseconds.
func changeTime(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
