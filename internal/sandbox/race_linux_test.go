package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// raceDuration is how long each swap scenario runs.
const raceDuration = 2 * time.Second

// TestSwapRace writes through the sandbox while another goroutine keeps
// exchanging a real directory (or file) with a symlink using renameat2
// RENAME_EXCHANGE, the check-then-use race that defeats path checks done
// before the open. Whatever the timing, no byte may land outside the allowed
// tree: the count of new or changed entries outside must be 0.
func TestSwapRace(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name  string
		allow string
		real  string // a real directory or file, exchanged with link
		link  string
		// target of the symlink: "OUT" is the outside dir, anything else
		// is a relative link target.
		target string
		write  func(i int) string
		// guarded is the project-relative tree that must not change (""
		// when only the outside dir matters).
		guarded string
	}{
		{
			name: "middle dir vs outside symlink", allow: "units/**",
			real: "units/x", link: "units/y", target: "OUT",
			write: func(i int) string { return fmt.Sprintf("units/x/f-%d.txt", i) },
		},
		{
			name: "allowed base vs outside symlink", allow: "prd/**",
			real: "prd", link: "prdlink", target: "OUT",
			write: func(i int) string { return fmt.Sprintf("prd/f-%d.txt", i) },
		},
		{
			name: "nested dir vs in-root symlink leaving the tree", allow: "prd/**",
			real: "prd/x/y", link: "prd/x/z", target: "../../memory",
			write:   func(i int) string { return fmt.Sprintf("prd/x/y/f-%d.txt", i) },
			guarded: "memory",
		},
		{
			name: "leaf file vs symlink to outside file", allow: "prd/**",
			real: "prd/leaf.txt", link: "prd/leaflink", target: "OUT/target.txt",
			write: func(int) string { return "prd/leaf.txt" },
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			proj, out := filepath.Join(root, "proj"), filepath.Join(root, "outside")
			must(t, os.MkdirAll(filepath.Join(proj, "memory/other"), 0o755))
			must(t, os.WriteFile(filepath.Join(proj, "memory/other/keep.txt"), []byte("keep\n"), 0o644))
			must(t, os.MkdirAll(out, 0o755))
			must(t, os.WriteFile(filepath.Join(out, "target.txt"), []byte("TARGET\n"), 0o644))
			realPath := filepath.Join(proj, sc.real)
			must(t, os.MkdirAll(filepath.Dir(realPath), 0o755))
			if filepath.Ext(sc.real) == ".txt" {
				must(t, os.WriteFile(realPath, []byte("leaf\n"), 0o644))
			} else {
				must(t, os.Mkdir(realPath, 0o755))
			}
			target := sc.target
			switch {
			case target == "OUT":
				target = out
			case filepath.Dir(target) == "OUT":
				target = filepath.Join(out, filepath.Base(target))
			}
			linkPath := filepath.Join(proj, sc.link)
			must(t, os.Symlink(target, linkPath))

			outBefore := snapshot(t, out)
			var guardBefore map[string]string
			if sc.guarded != "" {
				guardBefore = snapshot(t, filepath.Join(proj, sc.guarded))
			}
			s, err := New(proj, "racer", []string{sc.allow})
			must(t, err)
			defer s.Close()

			stop := make(chan struct{})
			var swaps atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := unix.Renameat2(unix.AT_FDCWD, realPath, unix.AT_FDCWD, linkPath, unix.RENAME_EXCHANGE); err != nil {
						t.Errorf("renameat2 RENAME_EXCHANGE: %v", err)
						return
					}
					swaps.Add(1)
				}
			}()
			var ok, refused, other int
			deadline := time.Now().Add(raceDuration)
			for i := 0; time.Now().Before(deadline); i++ {
				p := sc.write(i)
				data := []byte(fmt.Sprintf("write %d\n", i))
				var err error
				switch i % 3 {
				case 0:
					err = s.WriteFile(p, data)
				case 1:
					err = s.AppendFile(p, data)
				default:
					err = s.Update(p, func(old []byte) ([]byte, error) { return data, nil })
				}
				switch {
				case err == nil:
					ok++
				case isViolation(err):
					refused++
				default:
					other++ // e.g. a directory that vanished mid-walk
				}
			}
			close(stop)
			wg.Wait()

			landed := diff(outBefore, snapshot(t, out), func(string) bool { return false })
			if sc.guarded != "" {
				for _, p := range diff(guardBefore, snapshot(t, filepath.Join(proj, sc.guarded)), func(string) bool { return false }) {
					landed = append(landed, filepath.Join(sc.guarded, p))
				}
			}
			t.Logf("%d swaps; writes: %d ok, %d refused, %d other errors; landed outside: %d", swaps.Load(), ok, refused, other, len(landed))
			if len(landed) != 0 {
				t.Fatalf("%d entries landed outside the allowed tree: %v", len(landed), landed)
			}
			if ok == 0 {
				t.Fatalf("no write succeeded in %v, so the race was not exercised", raceDuration)
			}
			if swaps.Load() < 100 {
				t.Fatalf("only %d swaps happened", swaps.Load())
			}
		})
	}
}

func isViolation(err error) bool {
	_, ok := err.(*Error)
	return ok
}
