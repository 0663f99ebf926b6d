//go:build !windows && (!unix || aix || (solaris && !illumos))

package filelock

func open(path string) (locker, error) { return &exclLock{path: path}, nil }

func holderHint(path string) string { return exclHint(path) }
