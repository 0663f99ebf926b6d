// Package decisionlog keeps decision logs in OPA's decision-log format: one
// event per gate evaluation, masked and bounded as OPA does, appended as JSON
// lines to one file a day, and pushed to any collector of OPA decision logs
// as OPA's own decision-log plugin posts them (gzipped JSON arrays).
//
// Event has the fields of OPA's EventV1 (package
// github.com/open-policy-agent/opa/v1/plugins/logs) that des fills, with
// their names and shapes, rather than EventV1 itself: that package pulls in
// OPA's HTTP server and plugin manager, which a short-lived hook must not
// load. Tests decode Events into EventV1, and compare them with what a real
// OPA server logs, to keep the two in step.
package decisionlog

import (
	"crypto/rand"
	"fmt"
	"time"
)

// Event is one decision, with OPA's field names.
type Event struct {
	Labels      map[string]string     `json:"labels"`
	DecisionID  string                `json:"decision_id"`
	Bundles     map[string]BundleInfo `json:"bundles,omitempty"`
	Path        string                `json:"path,omitempty"` // "des/gates/<gate>", as OPA names data.des.gates.<gate>
	Input       *any                  `json:"input,omitempty"`
	Result      *any                  `json:"result,omitempty"`
	Erased      []string              `json:"erased,omitempty"` // JSON pointers removed by the mask or the size bound
	Masked      []string              `json:"masked,omitempty"` // JSON pointers replaced (OPA's upsert masks; des erases only)
	Error       *Error                `json:"error,omitempty"`
	RequestedBy string                `json:"requested_by,omitempty"`
	Timestamp   time.Time             `json:"timestamp"`
	Metrics     map[string]any        `json:"metrics,omitempty"`
	// AuditHead is des's own field, beside OPA's: the audit trail's head
	// as des read it just before the decision. A log pushed out of the
	// agent's reach pins the trail (`des-hook audit verify` checks it).
	AuditHead *AuditHead `json:"des_audit_head,omitempty"`
}

// AuditHead is the head of an audit trail: the seq and SHA-256 of its
// last chained line, and the trail's directory (absolute, links
// resolved) and machine.
type AuditHead struct {
	Dir    string `json:"dir"`
	Host   string `json:"host,omitempty"` // the machine's name
	Seq    int64  `json:"seq"`
	SHA256 string `json:"sha256"`
}

// BundleInfo is the revision of a bundle the decision was made with.
type BundleInfo struct {
	Revision string `json:"revision,omitempty"`
}

// Error is a decision that could not be made, as OPA logs an evaluation error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NewDecisionID returns a random UUID (version 4), as OPA's decision ids are.
func NewDecisionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("decision id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func timeParseDay(s string) (time.Time, error) { return time.Parse(dayLayout, s) }
