package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/internal/secrets"
)

// httpTokenName names the secret (in secrets.Dir) that a `serve --http` of
// agent in projectDir requires of its clients: one token per agent and
// project, so a client is trusted with exactly the one server it was given.
func httpTokenName(agent, projectDir string) (string, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return "http-" + agent + "-" + hex.EncodeToString(sum[:8]), nil
}

// httpToken returns (making it the first time) the bearer token of agent's
// `serve --http` in projectDir, and the file that holds it.
func httpToken(agent, projectDir string) (token, file string, err error) {
	name, err := httpTokenName(agent, projectDir)
	if err != nil {
		return "", "", err
	}
	if token, err = secrets.Token(name); err != nil {
		return "", "", err
	}
	file, err = secrets.Path(name)
	return token, file, err
}

// envAuthToken is the variable that once carried these tokens.
const envAuthToken = "TOOLHOST_AUTH_TOKEN"

// errSecretInArgv explains why a secret on the command line or in the
// environment is refused: any process of the same user, a confined command
// included, reads both (/proc/PID/cmdline, /proc/PID/environ).
func errSecretInArgv(what, instead string) error {
	return usageErr(fmt.Errorf("%s is not accepted: a secret on the command line or in the environment is readable by every process of the user (/proc/PID/cmdline, /proc/PID/environ), the agents' commands included; %s", what, instead))
}

// refuseEnvToken refuses to start while TOOLHOST_AUTH_TOKEN is set: this
// process's environment would hold a secret its commands could read.
func refuseEnvToken(instead string) error {
	if _, set := os.LookupEnv(envAuthToken); set {
		return errSecretInArgv(envAuthToken, "unset it; "+instead)
	}
	return nil
}
