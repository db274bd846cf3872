package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version and Commit are set by a release build that has no VCS stamp in
// its build info (GOFLAGS=-buildvcs=false, or a build outside the git
// checkout):
//
//	go build -ldflags "-X github.com/ddrun/ddrun/internal/cli.Version=v1.2.0 -X github.com/ddrun/ddrun/internal/cli.Commit=$(git rev-parse HEAD)" ./cmd/...
//
// What the build info holds wins over them.
var Version, Commit string

// VersionLine is what `coordinator version` and `worker version` print:
// the program, the module version, the VCS commit (with "+modified" when
// the tree had changes) and the Go version. Either is "unknown" when
// neither the build info nor the -ldflags variables give it.
func VersionLine(prog string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return versionLine(prog, bi, Version, Commit)
}

func versionLine(prog string, bi *debug.BuildInfo, ldVersion, ldCommit string) string {
	version := bi.Main.Version
	if version == "" || version == "(devel)" {
		switch {
		case ldVersion != "":
			version = ldVersion
		case version == "":
			version = "unknown"
		}
	}
	commit, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case commit == "" && ldCommit != "":
		commit = ldCommit
	case commit == "":
		commit = "unknown"
	case modified:
		commit += "+modified"
	}
	return fmt.Sprintf("%s %s commit %s %s", prog, version, commit, runtime.Version())
}
