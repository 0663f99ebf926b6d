package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0a1b2c"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"checkout build", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: rev}, "(devel) (0a1b2c, modified)"},
		{"go install @version", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"no version at all", debug.BuildInfo{Main: debug.Module{Path: modulePath}}, "(devel)"},
		{"a program importing des", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}, Deps: []*debug.Module{{Path: modulePath, Version: "v1.2.3"}}}, "v1.2.3"},
		{"des replaced", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}, Deps: []*debug.Module{{Path: modulePath, Version: "v1.2.3", Replace: &debug.Module{Path: "../des", Version: "v1.2.4"}}}}, "v1.2.4"},
		{"des not linked", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, "(devel)"},
	} {
		if got := versionOf(&c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
