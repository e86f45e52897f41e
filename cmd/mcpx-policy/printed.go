package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The commands mcpx-policy prints for a person to paste (clear, accept,
// approve, decline, the eval that uses an approval) run as printed from
// any directory and in another shell: they name the files and the state
// dir of the process that printed them, as absolute paths.

// printedStateDir is the state dir a printed command names for a
// --state-dir flag's value: the flag, else the one $MCPX_POLICY_STATE_DIR
// chose, as an absolute path; "" when neither did (the default state dir
// is the same in the shell that runs the command). The engine's Commands
// spell the same.
func printedStateDir(flag string) string {
	if flag == "" {
		flag = os.Getenv("MCPX_POLICY_STATE_DIR")
	}
	return absPath(flag)
}

// stateDirFlag is " --state-dir D", quoted for a POSIX shell, or "" when
// stateDir is "".
func stateDirFlag(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return " --state-dir " + writesQuote(stateDir)
}

// absPath is p made absolute, or p when that fails; "" stays "".
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// self is this program as the approval commands eval and approvals print
// name it: "mcpx-policy" when that is what the PATH finds, else the
// binary's own path — bin/mcpx-policy, as make demo runs it before anything
// is installed, prints commands that run as printed, with this very
// binary. go run's temporary binary (under a go-build folder), gone once
// go run ends, is named mcpx-policy.
func self() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "mcpx-policy"
	}
	if p, err := exec.LookPath("mcpx-policy"); err == nil {
		a, aerr := os.Stat(p)
		b, berr := os.Stat(exe)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return "mcpx-policy"
		}
	}
	return writesQuote(exe)
}
