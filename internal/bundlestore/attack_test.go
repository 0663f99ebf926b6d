package bundlestore_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/bundlestore"
)

// A bundle server, or anyone on the way to an http:// bundle URL, answers
// a gzip bomb: a small download of many files of zeros, each under the
// per-file bound. OPA's reader unpacks every file into memory before it
// checks a signature, so the pull (and the warm server that pulls in the
// background) must refuse it from the stream, without holding it.
func TestAttackGzipBombRefusedUnread(t *testing.T) {
	t.Parallel()
	const perFile, files = 1 << 20, 300 // 300 MiB unpacked
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	zeros := make([]byte, perFile)
	for i := range files {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("/z%03d/data.json", i), Mode: 0o644, Size: perFile, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(zeros)
	}
	tw.Close()
	zw.Close()
	if gz.Len() >= perFile {
		t.Fatalf("the bomb is %d bytes, over the download bound", gz.Len())
	}
	bomb := gz.Bytes()
	srv := serve(t, bomb, "")
	st := bundlestore.New(bundlestore.Options{Dir: t.TempDir(), Keys: pemKeys(t, rsaKey(t).pub), MaxBytes: perFile, Whole: []string{"des"}})

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := st.Pull(context.Background(), srv.URL+"/org.tar.gz")
	runtime.ReadMemStats(&after)
	var be *bundlestore.Error
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "unpacked, larger than") {
		t.Errorf("pull of a gzip bomb: %v, want refused as too large unpacked", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("the pull allocated %d MiB for a %d KiB download", alloc>>20, len(bomb)>>10)
	}
}
