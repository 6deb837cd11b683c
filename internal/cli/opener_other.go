//go:build !darwin

package cli

import "os"

// desktopOpener is xdg-open on a machine with a display, "" without one.
func desktopOpener() string {
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		return "xdg-open"
	}
	return ""
}
