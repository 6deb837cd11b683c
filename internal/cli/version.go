package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the toolhost version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(Version, vcsOf(debug.ReadBuildInfo())))
			return err
		},
	}
}

// vcs is what the Go toolchain recorded of the checkout it built from
// (go build does in a git checkout, go test does not).
type vcs struct {
	revision string
	modified bool
}

func vcsOf(info *debug.BuildInfo, ok bool) vcs {
	var v vcs
	if !ok {
		return v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// versionLine is `toolhost version`'s line: the version, the toolchain and
// the target; for a build that stamped no version, that it did not, and the
// commit the toolchain recorded instead, so a plain `go build` never passes
// for a release.
func versionLine(version string, v vcs) string {
	line := fmt.Sprintf("toolhost %s (%s, %s/%s", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if version != unstampedVersion {
		return line + ")"
	}
	line += "; not stamped with a version (make build stamps one)"
	if v.revision == "" {
		return line + ", commit unknown)"
	}
	line += ", built from commit " + v.revision
	if v.modified {
		line += " with uncommitted changes"
	}
	return line + ")"
}
