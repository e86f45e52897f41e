package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestFromBuildInfo: what the toolchain stamps becomes Info, and each
// field a build lacks reads "unknown".
func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name, stamped string
		want          Info
		line          string
	}{{
		name: "a release built from a clean checkout",
		stamped: "path\tgithub.com/mcpx/mcpx-policy/cmd/mcpx-policy\nmod\tgithub.com/mcpx/mcpx-policy\tv1.4.0\t\n" +
			"build\tvcs=git\nbuild\tvcs.revision=2c8008dc7abde34797237940b7b3c3bc6bbb2224\nbuild\tvcs.time=2026-12-01T15:55:50Z\nbuild\tvcs.modified=false\n",
		want: Info{Version: "v1.4.0", Revision: "2c8008dc7abde34797237940b7b3c3bc6bbb2224", Time: "2026-12-01T15:55:50Z", Go: "go1.26.0"},
		line: "mcpx-policy v1.4.0 (revision 2c8008dc7abde34797237940b7b3c3bc6bbb2224, 2026-12-01T15:55:50Z, go1.26.0)",
	}, {
		name: "a working tree with changes",
		stamped: "path\tgithub.com/mcpx/mcpx-policy/cmd/mcpx-policy\nmod\tgithub.com/mcpx/mcpx-policy\t(devel)\t\n" +
			"build\tvcs=git\nbuild\tvcs.revision=abc\nbuild\tvcs.time=2026-12-01T15:55:50Z\nbuild\tvcs.modified=true\n",
		want: Info{Version: "(devel)", Revision: "abc+dirty", Time: "2026-12-01T15:55:50Z", Go: "go1.26.0"},
		line: "mcpx-policy (devel) (revision abc+dirty, 2026-12-01T15:55:50Z, go1.26.0)",
	}, {
		name:    "no VCS information (-buildvcs=false)",
		stamped: "path\tgithub.com/mcpx/mcpx-policy/cmd/mcpx-policy\nmod\tgithub.com/mcpx/mcpx-policy\t(devel)\t\n",
		want:    Info{Version: "(devel)", Revision: Unknown, Time: Unknown, Go: "go1.26.0"},
		line:    "mcpx-policy (devel) (revision unknown, go1.26.0)",
	}} {
		bi, err := debug.ParseBuildInfo(tc.stamped)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		bi.GoVersion = "go1.26.0" // the toolchain's own, set apart from the text
		if got := fromBuildInfo(bi); got != tc.want || got.String() != tc.line {
			t.Errorf("%s: got %+v %q\nwant %+v %q", tc.name, got, got.String(), tc.want, tc.line)
		}
	}
	if got := Read(); got.Go != runtime.Version() || got.Version == "" || got.Revision == "" {
		t.Errorf("Read() = %+v", got)
	}
}
