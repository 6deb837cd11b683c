package confine

import "testing"

// TestFilterAssembles: every shape of the seccomp filter assembles (its
// jumps are forward and in range).
func TestFilterAssembles(t *testing.T) {
	t.Parallel()
	if nativeArch() == 0 {
		t.Skip("no seccomp filter is written for this arch")
	}
	for _, o := range []filterOptions{{}, {tcpOnly: true}} {
		if _, err := commandFilter(nativeArch(), o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
