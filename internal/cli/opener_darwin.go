package cli

// desktopOpener is macOS's open(1), which hands a URL to the user's
// default browser.
func desktopOpener() string { return "open" }
