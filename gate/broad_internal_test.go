package gate

import "testing"

func TestChmodApply(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec  string
		old   uint32
		dir   bool
		want  uint32
		known bool
	}{
		{"644", 0o644, false, 0o644, true},
		{"0755", 0o644, false, 0o755, true},
		{"755", 0o2755, true, 0o2755, true}, // a directory keeps its set-gid bit
		{"u+w", 0o644, false, 0o644, true},
		{"u+w", 0o444, false, 0o644, true},
		{"a-w", 0o644, false, 0o444, true},
		{"-w", 0o644, false, 0o444, true}, // no who: every class, a superset of the umask's
		{"+x", 0o755, false, 0o755, true},
		{"go-rwx", 0o600, false, 0o600, true},
		{"go-rwx", 0o644, false, 0o600, true},
		{"u=rw,go=r", 0o644, false, 0o644, true},
		{"g=u", 0o644, false, 0o664, true},
		{"u+X", 0o644, false, 0o644, true},
		{"u+X", 0o644, true, 0o744, true},
		{"u+s", 0o755, false, 0o4755, true},
		{"+t", 0o755, true, 0o1755, true},
		{"=r", 0o444, false, 0, false}, // depends on the umask
		{"+X", 0o644, false, 0, false},
		{"", 0o644, false, 0, false},
		{"u*w", 0o644, false, 0, false},
		{"12345", 0o644, false, 0, false},
		{"u", 0o644, false, 0, false},
	}
	for _, c := range cases {
		got, ok := chmodApply(c.spec, c.old, c.dir)
		if ok != c.known || ok && got != c.want {
			t.Errorf("chmodApply(%q, %o, dir=%v) = %o, %v; want %o, %v", c.spec, c.old, c.dir, got, ok, c.want, c.known)
		}
	}
}
