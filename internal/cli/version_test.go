package cli

import (
	"strings"
	"testing"
)

// TestVersionLine: a stamped build says its version only; an unstamped one
// says it is not stamped, and from which commit it was built when the
// toolchain recorded one.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	const rev = "0f48d16a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e"
	for _, tc := range []struct {
		name, version string
		vcs           vcs
		suffix        string
	}{
		{"stamped", "v0.2.0-3-g7ba8f2c", vcs{revision: rev}, ")"},
		{"plain go build", unstampedVersion, vcs{revision: rev}, "; not stamped with a version (make build stamps one), built from commit " + rev + ")"},
		{"plain go build, dirty", unstampedVersion, vcs{revision: rev, modified: true}, ", built from commit " + rev + " with uncommitted changes)"},
		{"no vcs recorded", unstampedVersion, vcs{}, "; not stamped with a version (make build stamps one), commit unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := versionLine(tc.version, tc.vcs)
			if want := "toolhost " + tc.version + " (go"; !strings.HasPrefix(got, want) {
				t.Errorf("%q does not start with %q", got, want)
			}
			if !strings.HasSuffix(got, tc.suffix) {
				t.Errorf("%q does not end with %q", got, tc.suffix)
			}
		})
	}
}
