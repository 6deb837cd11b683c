package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/procs"
)

// Feature is one thing Landlock can enforce, and whether this machine can.
type Feature struct {
	Name   string `json:"name"`
	ABI    int    `json:"abi"`
	Usable bool   `json:"usable"`
}

// ProbeResult is what `toolhost sandbox probe` reports.
type ProbeResult struct {
	Kernel
	Features []Feature `json:"features"`
	// Enforced is the outcome of a live check: a confined child was
	// refused a write outside its root and allowed one inside.
	Enforced bool `json:"enforced"`
	// Check says what the live check saw.
	Check string `json:"check"`
}

// Probe reports the Landlock ABI in use, what it can enforce, and checks
// with a real child (sh) that confinement holds on this machine.
func Probe() ProbeResult { return probe(thisMachine()) }

// probe is Probe on machine m.
func probe(m machine) ProbeResult {
	r := ProbeResult{Kernel: m.landlock}
	for _, f := range []Feature{
		{Name: "write only beneath the agent's roots", ABI: 1},
		{Name: "no linking or renaming into a root from outside (refer)", ABI: 2},
		{Name: "no truncating files outside the roots", ABI: 3},
		{Name: "TCP connect and bind rules (sandbox.network)", ABI: abiNet},
		{Name: "no ioctl on devices other than /dev/null, /dev/tty …", ABI: 5},
		{Name: "no signals or abstract unix sockets to processes outside the command", ABI: abiScoped},
		{Name: "denials after exec in the kernel's audit log", ABI: abiLogs},
	} {
		f.Usable = r.ABI >= f.ABI
		r.Features = append(r.Features, f)
	}
	// Not Landlock's (ABI 0): the seccomp filter every confined process gets.
	r.Features = append(r.Features, Feature{Name: "no io_uring, TIOCSTI, 32-bit calls, MPTCP or TCP Fast Open past the TCP rules (seccomp)",
		Usable: m.noFilter == ""})
	r.Enforced, r.Check = liveCheck(m)
	return r
}

// liveCheck confines sh to a scratch root and checks that a write inside
// works and one beside it is refused.
func liveCheck(m machine) (bool, string) {
	base, err := os.MkdirTemp("", "toolhost-probe-")
	if err != nil {
		return false, err.Error()
	}
	defer os.RemoveAll(base)
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		return false, err.Error()
	}
	plan, err := prepare(Request{
		Agent: "probe", ProjectDir: base,
		Sandbox: agents.Sandbox{WriteAllowList: []string{"root/**"}, Commands: agents.CommandsBestEffort},
	}, "", m)
	if err != nil {
		return false, err.Error()
	}
	defer plan.Close()
	if !plan.Confined() {
		return false, "not run: " + plan.Unconfined
	}
	sh := "/bin/sh"
	child, err := procs.Spawn(plan.Command("probe", []string{sh, "-c", "echo in > root/in; echo out > out"}, base))
	plan.Close()
	if err != nil {
		return false, err.Error()
	}
	<-child.Done()
	_, inErr := os.Stat(filepath.Join(root, "in"))
	_, outErr := os.Stat(filepath.Join(base, "out"))
	switch {
	case inErr != nil:
		return false, "a write inside the root failed: " + inErr.Error()
	case outErr == nil:
		return false, "a write outside the root was NOT refused"
	case !errors.Is(outErr, os.ErrNotExist):
		return false, outErr.Error()
	}
	return true, fmt.Sprintf("a confined %s wrote inside its root and was refused a write beside it", sh)
}
