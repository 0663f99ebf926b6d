package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/statemachine"
)

// des's evidence of a workflow is kept under its identity (isdlc's
// type@started_at). A write, or a git checkout, that starts a workflow
// under an identity des already holds records of would inherit them
// (DES-WORKFLOW-REUSED), unless it brings that workflow back as des saw
// it: a workflow ended by mistake and written back, a branch switched
// back to. So des remembers, per workflow-state document and identity, the
// active_workflow contents it saw (on disk when it judged a write, or as
// an allowed write landed), outside the project and apart from the V8
// memory, which a git checkout drops.

// workflowsSeenMax bounds the contents kept per identity, the newest kept.
const workflowsSeenMax = 32

func (d DocumentWrite) workflowsSeenPath() string {
	return filepath.Join(d.StateDir, "workflows-seen.json")
}

// workflowContent is the identity of doc's active workflow and a hash of
// its active_workflow (as JSON values, so formatting and key order do not
// count); "" when doc holds no active workflow.
func workflowContent(doc map[string]any) (id, sum string) {
	id = isdlc.WorkflowID(doc)
	if id == "" {
		return "", ""
	}
	raw, err := json.Marshal(doc["active_workflow"])
	if err != nil {
		return "", ""
	}
	h := sha256.Sum256(raw)
	return id, hex.EncodeToString(h[:])
}

// readWorkflowsSeen reads the memory: document → identity → contents.
func (d DocumentWrite) readWorkflowsSeen() (map[string]map[string][]string, error) {
	raw, err := fileio.ReadBounded(d.workflowsSeenPath(), maxStateMemory)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[string][]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]map[string][]string{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("des's memory of workflows %s: %w", d.workflowsSeenPath(), err)
	}
	return m, nil
}

// sawWorkflow reports whether the memory m holds the workflow of doc, as
// doc holds it, in the document rel.
func sawWorkflow(m map[string]map[string][]string, rel string, doc map[string]any) bool {
	id, sum := workflowContent(doc)
	return id != "" && slices.Contains(m[rel][id], sum)
}

// RememberWorkflow records the workflow content of the state document doc
// at rel (root-relative) in the state directory stateDir, as des saw it:
// when it recorded a test run of that workflow. Failing to is no error:
// the memory only ever exempts.
func RememberWorkflow(ctx context.Context, stateDir, rel string, doc map[string]any) {
	DocumentWrite{StateDir: stateDir}.remember(ctx, rel, doc)
}

// rememberWorkflow records the workflow content of the state document raw
// at rel (none when raw is nil) and returns the memory as it then stands,
// nil when it cannot be read. Failing to record is no error of the write
// it comes with: the memory only ever exempts.
func (d DocumentWrite) rememberWorkflow(ctx context.Context, rel string, raw []byte) map[string]map[string][]string {
	if d.StateDir == "" {
		return nil
	}
	if raw != nil {
		v, err := datadoc.Decode(raw)
		if doc, ok := v.(map[string]any); err == nil && ok {
			return d.remember(ctx, rel, doc)
		}
	}
	m, _ := d.readWorkflowsSeen()
	return m
}

// remember is rememberWorkflow of a decoded document.
func (d DocumentWrite) remember(ctx context.Context, rel string, doc map[string]any) map[string]map[string][]string {
	if d.StateDir == "" {
		return nil
	}
	m, err := d.readWorkflowsSeen()
	id, sum := workflowContent(doc)
	if id == "" {
		return m
	}
	if err == nil {
		if sums := m[rel][id]; len(sums) > 0 && sums[len(sums)-1] == sum {
			return m // the newest already: every judged write of a workflow comes here
		}
	}
	if err := os.MkdirAll(d.StateDir, 0o700); err != nil {
		return m
	}
	ctx, cancel := context.WithTimeout(ctx, stateMemoryLockTimeout)
	defer cancel()
	lk, err := filelock.Acquire(ctx, d.workflowsSeenPath()+".lock")
	if err != nil {
		return m
	}
	defer lk.Unlock()
	m, err = d.readWorkflowsSeen()
	if err != nil {
		m = map[string]map[string][]string{} // unreadable: start again (it only exempts)
	}
	if m[rel] == nil {
		m[rel] = map[string][]string{}
	}
	sums := slices.DeleteFunc(m[rel][id], func(s string) bool { return s == sum })
	sums = append(sums, sum)
	if len(sums) > workflowsSeenMax {
		sums = sums[len(sums)-workflowsSeenMax:]
	}
	m[rel][id] = sums
	if data, err := json.Marshal(m); err == nil {
		_ = statemachine.WriteFileAtomic(d.workflowsSeenPath(), data)
	}
	return m
}
