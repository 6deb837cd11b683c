//go:build !linux

package confine

// landlock is never reached with a Landlock ABI here (abiVersion), so the
// plan is the one a kernel without Landlock gets.
func (p *Plan) landlock(_ Request, k Kernel, _ string) (*Plan, error) { return p.cannot(k.Reason) }
