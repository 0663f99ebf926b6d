package taskgraph

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/jsonschemas"
)

// Problems of a graph that exists but cannot be used (the facts' "problem").
const (
	ProblemInvalidJSON = "invalid_json"
	ProblemNotObject   = "not_object"
	ProblemUnreadable  = "unreadable" // disk only: too large, not a regular file, out of the project, I/O error
	// ProblemTooLarge is a write of more than MaxBytes: DES could not read
	// it back, so the next write would not be compared with it.
	ProblemTooLarge = "too_large"
)

// WriteFacts is input.task_graph of a document_write of the graph: rel is
// the graph's slash path relative to root, incoming the content the write
// would leave. The object holds "path"; "document" (the incoming content
// parsed) and "schema_errors" ([{"pointer","msg"}], empty when valid), or
// "problem" and "error" when the content is not a JSON object or is larger
// than MaxBytes (DES could not read it back to compare the next write with); and "disk",
// the graph on disk parsed, absent when there is none or it is unusable.
func WriteFacts(root, rel string, incoming []byte) map[string]any {
	f := map[string]any{"path": rel}
	if len(incoming) > MaxBytes {
		f["problem"], f["error"] = ProblemTooLarge, fmt.Sprintf("%s: %d bytes, over the %d MiB DES reads of a task graph; keep long text out of the plan", rel, len(incoming), MaxBytes>>20)
	} else if _, doc, err := Parse(incoming); err != nil {
		f["problem"], f["error"] = problem(err), fmt.Sprintf("%s: %v", rel, err)
	} else {
		f["document"], f["schema_errors"] = doc, jsonschemas.Facts(Validate(doc))
	}
	if data, err := readIn(root, rel); err == nil {
		if _, disk, err := Parse(data); err == nil {
			f["disk"] = disk
		}
	}
	return f
}

// InvocationFacts is input.task_graph of a pre_invocation: {"path",
// "document"} of the graph on disk, or {"path", "problem", "error"} when it
// exists but is unusable; nil when there is no graph file. The file is read
// through root: a path that leads out of the project is unusable.
func InvocationFacts(root, rel string) map[string]any {
	data, err := readIn(root, rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	f := map[string]any{"path": rel}
	if err != nil {
		f["problem"], f["error"] = ProblemUnreadable, fmt.Sprintf("the task graph %s cannot be read: %v", rel, err)
		return f
	}
	if _, doc, err := Parse(data); err != nil {
		f["problem"], f["error"] = problem(err), fmt.Sprintf("%s: %v; fix the file or restore it from git", rel, err)
	} else {
		f["document"] = doc
	}
	return f
}

func problem(err error) string {
	if errors.Is(err, ErrNotObject) {
		return ProblemNotObject
	}
	return ProblemInvalidJSON
}

// readIn reads rel inside root, bounded, after a stat shows a regular file
// (opening a FIFO would block the hook).
func readIn(root, rel string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := fileio.ReadBoundedIn(r, rel, MaxBytes)
	if errors.Is(err, fileio.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", ErrNotRegular, err)
	}
	return data, err
}
