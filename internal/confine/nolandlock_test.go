package confine

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/agents"
	"github.com/toolhost/toolhost/internal/fault"
)

// withoutLandlock is the machine macOS is (landlock_other.go,
// seccomp_other.go): the Landlock query is unsupported, no seccomp filter.
var withoutLandlock = machine{landlock: kernelFrom(0, errors.ErrUnsupported), noFilter: "this system has no seccomp filters"}

// TestMachineWithoutLandlock: on a system without Landlock sandbox.commands
// decides as documented. require refuses with the reason, the probe to
// run and the modes to choose instead; best-effort runs unconfined and says
// what is not enforced; off runs unconfined; every mode still filters the
// environment.
func TestMachineWithoutLandlock(t *testing.T) {
	t.Parallel()
	req := func(mode string) Request {
		return Request{Agent: "devloop-coder", Sandbox: agents.Sandbox{Commands: mode, WriteAllowList: []string{"src/**"}},
			ProjectDir: t.TempDir(), Environ: []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-1"}}
	}

	_, err := prepare(req(agents.CommandsRequire), "", withoutLandlock)
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.RejectionKind() != fault.Sandbox {
		t.Fatalf("require: err = %v, want an UnavailableError of kind sandbox", err)
	}
	for _, want := range []string{"has no Landlock", `"best-effort"`, `"off"`, "toolhost sandbox probe"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("require: refusal %q does not say %q", err, want)
		}
	}

	for _, tc := range []struct{ mode, unconfined, notEnforced string }{
		{agents.CommandsBestEffort, "has no Landlock", "io_uring and TIOCSTI are not refused (this system has no seccomp filters)"},
		{agents.CommandsOff, "sandbox.commands is off", ""},
	} {
		p, err := prepare(req(tc.mode), "", withoutLandlock)
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		r := p.Report()
		if r.Confined || !strings.Contains(r.Unconfined, tc.unconfined) || !strings.Contains(strings.Join(r.NotEnforced, "; "), tc.notEnforced) {
			t.Errorf("%s: report %+v, want unconfined (%q) noting %q", tc.mode, r, tc.unconfined, tc.notEnforced)
		}
		if strings.Join(r.Env, " ") != "PATH" {
			t.Errorf("%s: env %v, want only PATH passed", tc.mode, r.Env)
		}
		p.Close()
	}
}

// TestProbeWithoutLandlock: `toolhost sandbox probe` on such a system says
// what is missing: no ABI and why, no feature usable, no live check run.
func TestProbeWithoutLandlock(t *testing.T) {
	t.Parallel()
	r := probe(withoutLandlock)
	if r.ABI != 0 || !strings.Contains(r.Reason, "has no Landlock") {
		t.Errorf("kernel %+v, want ABI 0 and the reason", r.Kernel)
	}
	for _, f := range r.Features {
		if f.Usable {
			t.Errorf("feature %q usable on a machine without Landlock or seccomp", f.Name)
		}
	}
	if r.Enforced || !strings.HasPrefix(r.Check, "not run: ") || !strings.Contains(r.Check, "has no Landlock") {
		t.Errorf("check enforced=%v %q, want not run, with the reason", r.Enforced, r.Check)
	}
}
