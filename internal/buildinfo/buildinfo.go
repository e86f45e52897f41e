// Package buildinfo says which build of mcpx-policy is running: the
// module version and the version-control revision the Go toolchain
// stamped into the binary (runtime/debug.ReadBuildInfo). The CLI prints it
// (`mcpx-policy version`), /healthz returns it and /metrics exports it as
// mcpx_policy_build_info.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Unknown stands for a field the binary does not carry: a build without
// version-control information (go build -buildvcs=false, a source tree
// outside git) has no revision.
const Unknown = "unknown"

// Info is one build's identity. Every field is set (Unknown when the
// binary does not say).
type Info struct {
	// Version is the main module's version: a release tag (v1.2.0), a
	// pseudo-version go install computed, or "(devel)" for a build of a
	// working tree.
	Version string `json:"version"`
	// Revision is the version-control revision the build was made from
	// (the full commit hash), with "+dirty" when the tree had changes.
	Revision string `json:"revision"`
	// Time is the revision's commit time (RFC 3339), or Unknown.
	Time string `json:"time"`
	// Go is the Go toolchain that built the binary (go1.26.0).
	Go string `json:"go"`
}

// Read returns the running binary's Info. Safe for concurrent use.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: Unknown, Revision: Unknown, Time: Unknown, Go: runtime.Version()}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Revision: Unknown, Time: Unknown, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = Unknown
	}
	if in.Go == "" {
		in.Go = runtime.Version()
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && in.Revision != Unknown {
		in.Revision += "+dirty"
	}
	return in
}

// String is the one line `mcpx-policy version` prints:
// "mcpx-policy VERSION (revision REV, TIME, GO)".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString("mcpx-policy ")
	b.WriteString(in.Version)
	b.WriteString(" (revision ")
	b.WriteString(in.Revision)
	if in.Time != Unknown {
		b.WriteString(", ")
		b.WriteString(in.Time)
	}
	b.WriteString(", ")
	b.WriteString(in.Go)
	b.WriteString(")")
	return b.String()
}
