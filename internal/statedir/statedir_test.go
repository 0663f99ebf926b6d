package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestBaseOrder(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvVar: "/s", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s"},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/des"},
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/des"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/des"},
	}
	for _, c := range cases {
		if got := Base(env(c.env)); got != c.want {
			t.Errorf("Base(%v) = %q, want %q", c.env, got, c.want)
		}
	}
	if got := Base(env(nil)); !filepath.IsAbs(got) {
		t.Errorf("Base without home = %q, want an absolute path", got)
	}
}

func TestProjectKeyFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if ProjectKey(real) != ProjectKey(link) {
		t.Error("a root reached through a link has another key")
	}
	if ProjectKey(real) == ProjectKey(dir) {
		t.Error("two roots share a key")
	}
}

func TestEnsure(t *testing.T) {
	base := t.TempDir()
	dir, err := Ensure("/some/project", env(map[string]string{EnvVar: base}))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("Ensure made %v (%v)", fi, err)
	}
}
