// Command noop reads its standard input and exits 0: the baseline a hook
// process is measured against (a Go program's start-up and exit, nothing
// more). The hook's process benchmark builds it the same way as the hook.
package main

import (
	"io"
	"os"
)

func main() {
	_, _ = io.Copy(io.Discard, os.Stdin)
}
