package procs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// ErrForeignGroup is returned when a recorded process group id now belongs
// to an unrelated process, so signalling it would hit a stranger.
var ErrForeignGroup = errors.New("process group id was reused by another process")

// Group names a unit's process group by its leader's identity.
type Group struct {
	PGID        int
	LeaderPID   int
	LeaderTicks uint64
}

// StopReport says how a group was stopped.
type StopReport struct {
	// Signal is the strongest signal sent: "" (nothing was running),
	// "SIGTERM" or "SIGKILL".
	Signal string `json:"signal,omitempty"`
	// Members are the pids that were in the group when stop began.
	Members []int `json:"members,omitempty"`
	// Killed are the pids that outlived SIGTERM and the grace period.
	Killed []int `json:"killed,omitempty"`
}

// pollEvery is how often a stopping group is checked for survivors.
const pollEvery = 20 * time.Millisecond

// killWait bounds the wait for the kernel to finish SIGKILLed processes.
const killWait = 5 * time.Second

// reapWait bounds the wait for a stopped leader's bookkeeping when the
// caller's context has no end: far longer than a reap and a durable write
// take on a loaded machine, short of a hung call.
const reapWait = time.Minute

// checkOwner confirms the group is still the unit's: its leader is alive
// with the recorded start time, or the group has no leader any more (the
// leader exited and its children kept the group). A live process with the
// group's id but another start time means the id was reused.
func (g Group) checkOwner() error {
	if g.PGID <= 1 {
		return fmt.Errorf("process group %d: refusing to signal", g.PGID)
	}
	if Alive(g.LeaderPID, g.LeaderTicks) {
		return nil
	}
	st, err := ReadStat(g.PGID)
	switch {
	case errors.Is(err, ErrNoProcess):
		return nil
	case err != nil:
		return err
	case st.Dead():
		return nil
	case g.PGID == g.LeaderPID || st.PGID == g.PGID:
		return fmt.Errorf("%w: pid %d started at tick %d, the unit's leader at tick %d", ErrForeignGroup, g.PGID, st.StartTicks, g.LeaderTicks)
	}
	return nil
}

// StopGroup sends SIGTERM to every process of the group, waits up to grace
// for all of them to exit, then sends SIGKILL to the survivors and waits
// until none is left. Cancelling ctx only shortens the grace period: a stop
// that has begun always finishes, so no process of the group is left behind.
func StopGroup(ctx context.Context, g Group, grace time.Duration) (StopReport, error) {
	var rep StopReport
	if err := g.checkOwner(); err != nil {
		return rep, err
	}
	members, err := GroupMembers(g.PGID)
	if err != nil {
		return rep, err
	}
	rep.Members = members
	if len(members) == 0 {
		return rep, nil
	}
	rep.Signal = "SIGTERM"
	if err := syscall.Kill(-g.PGID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return rep, fmt.Errorf("SIGTERM process group %d: %w", g.PGID, err)
	}
	left, err := waitEmpty(ctx, g.PGID, grace)
	if err != nil || len(left) == 0 {
		return rep, err
	}
	rep.Signal, rep.Killed = "SIGKILL", left
	if err := syscall.Kill(-g.PGID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return rep, fmt.Errorf("SIGKILL process group %d: %w", g.PGID, err)
	}
	left, err = waitEmpty(context.Background(), g.PGID, killWait)
	if err != nil {
		return rep, err
	}
	if len(left) > 0 {
		return rep, fmt.Errorf("processes %v of group %d survived SIGKILL", left, g.PGID)
	}
	return rep, nil
}

// waitEmpty polls until the group has no live member, d passes or ctx is
// done, and returns the members still alive.
func waitEmpty(ctx context.Context, pgid int, d time.Duration) ([]int, error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		left, err := GroupMembers(pgid)
		if err != nil || len(left) == 0 {
			return left, err
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return GroupMembers(pgid)
		case <-ctx.Done():
			return GroupMembers(pgid)
		}
	}
}
