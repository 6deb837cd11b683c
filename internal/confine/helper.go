package confine

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
)

// HelperName is the file name of the small confinement helper
// (cmd/toolhost-confine) that make build and the release archives install
// beside toolhost. It links this package, so it can be a holder too.
const HelperName = "toolhost-confine"

// Helper is the path of the helper installed beside the running binary, or
// "" when there is none, or the one there is not from the same build. A
// process of the helper starts in a fraction of a whole toolhost's time, so
// the holder in front of every confined command and the hook's rewrite of
// the agent CLI's Bash run it when they can. Both sides of the holder's
// command line (holderArg) are this package: a helper left over from
// another build could speak another, so only a same-build helper is taken
// (the Go version, the main module and its version control stamp of both
// binaries agree), else the caller runs its own binary.
var Helper = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	helper := filepath.Join(filepath.Dir(exe), HelperName)
	fi, err := os.Stat(helper)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	ours, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	theirs, err := buildinfo.ReadFile(helper)
	if err != nil || !sameBuild(ours, theirs) {
		return ""
	}
	return helper
})

// sameBuild reports whether two binaries come from the same build of this
// module: the same Go, main module version and version control stamp.
func sameBuild(a, b *debug.BuildInfo) bool {
	stamp := func(bi *debug.BuildInfo) []debug.BuildSetting {
		var out []debug.BuildSetting
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs", "vcs.revision", "vcs.time", "vcs.modified", "-ldflags", "GOOS", "GOARCH", "CGO_ENABLED":
				out = append(out, s)
			}
		}
		return out
	}
	return a.GoVersion == b.GoVersion && a.Main.Path == b.Main.Path && a.Main.Version == b.Main.Version &&
		a.Main.Sum == b.Main.Sum && slices.Equal(stamp(a), stamp(b))
}
