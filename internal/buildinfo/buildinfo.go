// Package buildinfo says which des a binary holds, read from the build
// information Go records: one place for des-hook version and the decision
// log's labels.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// modulePath is des's module.
const modulePath = "github.com/deterministic-exec/des"

// Version is the version of the des module in this binary: the main
// module's when des is the main module, with the commit it was built from
// when the build records one ("(devel) (0a1b2c…, modified)": built from a
// checkout, where no module version tells builds apart); des's version as
// a dependency of a program that imports it; "(devel)" when unknown.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	if info.Main.Path == modulePath {
		v := info.Main.Version
		if v == "" {
			v = "(devel)"
		}
		return v + vcsSuffix(info)
	}
	for _, d := range info.Deps {
		if d.Path == modulePath {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(devel)"
}

// GoVersion is the Go release the binary was built with.
func GoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.GoVersion != "" {
		return info.GoVersion
	}
	return runtime.Version()
}

// vcsSuffix is " (REVISION[, modified])" when the build records its
// commit, "" otherwise.
func vcsSuffix(info *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return ""
	}
	if modified == "true" {
		rev += ", modified"
	}
	return " (" + rev + ")"
}
